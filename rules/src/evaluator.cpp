// Evaluating compiled rules on an analysed timeline: select, group by site, aggregate per step, compare.
// Every pass is linear in the events (plus ancestor walks); names are matched once per interned string.
#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "ledger_text.h"
#include "rule_model.h"
#include "step_claims.h"

namespace ptadvise {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNestingToleranceNs = 1000;  // float µs timestamps rounded separately (KINETO.md)
constexpr int kMaxAncestorDepth = 256;         // guards against a malformed parent chain

// Splits a JSON array's text into its top-level elements (whitespace-trimmed, raw JSON each).
std::vector<std::string_view> split_json_array(std::string_view text) {
  std::vector<std::string_view> out;
  size_t begin = text.find('[');
  if (begin == std::string_view::npos) return out;
  int depth = 0;
  bool in_string = false;
  size_t start = begin + 1;
  for (size_t i = begin; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') ++depth;
    else if (c == ']' || c == '}') {
      if (--depth == 0) {
        std::string_view last = text.substr(start, i - start);
        if (last.find_first_not_of(" \t\r\n") != std::string_view::npos) out.push_back(last);
        break;
      }
    } else if (c == ',' && depth == 1) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  for (auto& element : out) {
    while (!element.empty() && std::isspace(static_cast<unsigned char>(element.front()))) element.remove_prefix(1);
    while (!element.empty() && std::isspace(static_cast<unsigned char>(element.back()))) element.remove_suffix(1);
  }
  return out;
}

std::string unquote(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') return std::string(text.substr(1, text.size() - 2));
  return std::string(text);
}

std::optional<double> to_number(std::string_view text) {
  std::string value = unquote(text);
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  double number = std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size() || !std::isfinite(number)) return std::nullopt;
  return number;
}

std::string format_number(double value) {
  if (std::isnan(value)) return "n/a";
  char buffer[64];
  double magnitude = std::fabs(value);
  if (magnitude >= 100 || value == std::floor(value)) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else if (magnitude >= 10) {
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
  } else if (magnitude >= 0.1) {
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
  } else {
    // Three significant digits in plain decimals ("0.00008", never "8e-05"), trailing zeros dropped.
    int decimals = std::min(12, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    std::string text = buffer;
    if (text.find('.') != std::string::npos) {
      while (text.back() == '0') text.pop_back();
      if (text.back() == '.') text.pop_back();
    }
    return text;
  }
  return buffer;
}

std::string format_bytes(double value) {
  if (std::isnan(value)) return "n/a";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(value) >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return format_number(value) + " " + units[unit];
}

struct Group {
  std::vector<EventIndex> events;
};

// Per-track time index of one selection, for the sequence predicates.
struct TrackIndex {
  struct Span {
    int64_t start, end;
    EventIndex event;
  };
  std::unordered_map<uint32_t, std::vector<Span>> by_start;  // sorted by start
  std::unordered_map<uint32_t, std::vector<Span>> by_end;    // sorted by end
};

class Evaluator {
 public:
  Evaluator(const Analysis& analysis, std::vector<uint8_t>& claimed, StepClaims& step_claims)
      : a_(analysis), tl_(*analysis.timeline), ev_(analysis.timeline->events), claimed_(claimed),
        step_claims_(step_claims) {
    // Per-step figures describe the steady-state steps: divided by their count, percentages by their
    // mean period (never a mean over one set of steps divided by a median over another).
    steps_ = std::max<size_t>(1, a_.steady_step_count());
    step_period_ms_ = a_.step_period_ns() / 1e6;
    // Ledger entries are pieces of longer idle stretches (split where the host's activity changes); the
    // length of the whole stretch tells a launch gap of a few µs from a stall.
    stretch_ns_.assign(a_.idle.size(), 0);
    for (size_t first = 0; first < a_.idle.size();) {
      size_t last = first;
      while (last + 1 < a_.idle.size() && contiguous(a_.idle[last], a_.idle[last + 1])) ++last;
      int64_t length = a_.idle[last].end_ns - a_.idle[first].start_ns;
      for (size_t k = first; k <= last; ++k) stretch_ns_[k] = length;
      first = last + 1;
    }
  }

  static bool contiguous(const IdleGap& current, const IdleGap& following) {
    return following.device == current.device && following.step == current.step &&
           following.start_ns <= current.end_ns + kNestingToleranceNs;
  }

  std::vector<Finding> run(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options) {
    rule_ = &rule;
    thresholds_.clear();
    auto overrides = options.thresholds.find(info.id);
    for (const auto& threshold : rule.thresholds) {
      double value = threshold.value;
      if (overrides != options.thresholds.end()) {
        auto found = overrides->second.find(threshold.name);
        if (found != overrides->second.end()) value = found->second;
      }
      thresholds_.push_back(value);
    }
    selected_.assign(rule.selections.size(), {});
    indexes_.assign(rule.selections.size(), {});
    indexed_.assign(rule.selections.size(), false);
    for (size_t s = 0; s < rule.selections.size(); ++s) selected_[s] = select(rule.selections[s]);

    groups_ = make_groups(rule);
    idle_gaps_.assign(rule.metrics.size(), {});
    idle_ready_.assign(rule.metrics.size(), false);
    trace_values_.assign(rule.metrics.size(), std::nullopt);

    std::vector<Finding> findings;
    for (size_t g = 0; g < groups_.size(); ++g) {
      group_ = g;
      group_values_.assign(rule.metrics.size(), std::nullopt);
      if (rule.when && !holds(*rule.when)) continue;
      Finding finding = make_finding(info, rule, options);
      if (below_noise_floor_) continue;
      findings.push_back(std::move(finding));
    }
    std::stable_sort(findings.begin(), findings.end(),
                     [](const Finding& x, const Finding& y) { return x.saving_ms_per_step > y.saving_ms_per_step; });
    return findings;
  }

 private:
  // ---- selection --------------------------------------------------------------------------------

  EventIndex anchor(EventIndex i) const {
    // GPU-side events are placed on the host by their launching call.
    if (is_gpu_side(ev_.kind[i])) return i < ev_.launch.size() ? ev_.launch[i] : kNone;
    return i;
  }

  // A launch call that returns no earlier than the end of the GPU op it launched.
  bool waits_for_gpu(EventIndex i) const {
    const EventKind kind = ev_.kind[i];
    if (kind != EventKind::Runtime && kind != EventKind::Driver) return false;
    const EventIndex gpu_op = i < ev_.launch.size() ? ev_.launch[i] : kNone;
    return gpu_op != kNone && is_gpu_activity(ev_.kind[gpu_op]) && ev_.end_ns(i) >= ev_.end_ns(gpu_op);
  }

  EventIndex parent(EventIndex i) const { return i < ev_.parent.size() ? ev_.parent[i] : kNone; }

  uint32_t step(EventIndex i) const { return i < a_.event_step.size() ? a_.event_step[i] : kNone; }

  bool any_ancestor(EventIndex i, NameCache& cache) const {
    EventIndex start = anchor(i);
    if (start == kNone) return false;
    EventIndex current = is_gpu_side(ev_.kind[i]) ? start : parent(start);
    for (int depth = 0; current != kNone && depth < kMaxAncestorDepth; ++depth) {
      if (cache.matches(ev_.name[current])) return true;
      current = parent(current);
    }
    return false;
  }

  std::optional<std::string> arg_text(EventIndex i, const ArgPredicate& predicate) const {
    auto value = tl_.arg_string(i, predicate.key);
    if (!value || !predicate.index) return value;
    auto elements = split_json_array(*value);
    if (static_cast<size_t>(*predicate.index) >= elements.size()) return std::nullopt;
    return unquote(elements[static_cast<size_t>(*predicate.index)]);
  }

  std::optional<double> arg_number(EventIndex i, const ArgPredicate& predicate) const {
    if (!predicate.index) {
      if (auto number = tl_.arg_double(i, predicate.key)) return number;
      return std::nullopt;
    }
    auto text = arg_text(i, predicate);
    return text ? to_number(*text) : std::nullopt;
  }

  bool arg_holds(EventIndex i, const ArgPredicate& predicate) const {
    switch (predicate.op) {
      case ArgOp::Exists: return arg_text(i, predicate).has_value();
      case ArgOp::Missing: return !arg_text(i, predicate).has_value();
      case ArgOp::NonEmpty: {
        auto text = arg_text(i, predicate);
        if (!text) return false;
        std::string compact;
        for (char c : *text) {
          if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
        }
        return !(compact.empty() || compact == "[]" || compact == "{}" || compact == "null" || compact == "\"\"");
      }
      case ArgOp::Lt: case ArgOp::Le: case ArgOp::Gt: case ArgOp::Ge: {
        auto number = arg_number(i, predicate);
        if (!number) return false;
        if (predicate.op == ArgOp::Lt) return *number < predicate.number;
        if (predicate.op == ArgOp::Le) return *number <= predicate.number;
        if (predicate.op == ArgOp::Gt) return *number > predicate.number;
        return *number >= predicate.number;
      }
      case ArgOp::Eq: case ArgOp::Ne: {
        bool equal = false;
        if (predicate.numeric) {
          auto number = arg_number(i, predicate);
          if (number) {
            equal = *number == predicate.number;
          } else {
            auto text = arg_text(i, predicate);
            if (!text) return false;
            equal = *text == predicate.text;
          }
        } else {
          auto text = arg_text(i, predicate);
          if (!text) return false;
          equal = *text == predicate.text;
        }
        return predicate.op == ArgOp::Eq ? equal : !equal;
      }
      case ArgOp::Contains: {
        auto text = arg_text(i, predicate);
        return text && text->find(predicate.text) != std::string::npos;
      }
      case ArgOp::Glob: {
        auto text = arg_text(i, predicate);
        return text && glob_match(predicate.text, *text);
      }
      case ArgOp::DimNotMultipleOf: {
        auto text = arg_text(i, predicate);
        if (!text) return false;
        // Every integer in the (possibly nested) dims value; a dim of 1 is a broadcast, not a shape problem.
        const auto divisor = static_cast<int64_t>(predicate.number);
        int64_t value = 0;
        bool in_number = false;
        for (size_t k = 0; k <= text->size(); ++k) {
          char c = k < text->size() ? (*text)[k] : ' ';
          if (c >= '0' && c <= '9') {
            if (value < (int64_t{1} << 50)) value = value * 10 + (c - '0');
            in_number = true;
          } else {
            if (in_number && value > 1 && value % divisor != 0) return true;
            value = 0;
            in_number = false;
          }
        }
        return false;
      }
    }
    return false;
  }

  const TrackIndex& track_index(size_t selection) {
    if (!indexed_[selection]) {
      TrackIndex& index = indexes_[selection];
      for (EventIndex e : selected_[selection]) {
        EventIndex at = anchor(e);
        if (at == kNone) continue;
        TrackIndex::Span span{ev_.ts_ns[at], ev_.end_ns(at), e};
        index.by_start[ev_.track[at]].push_back(span);
        index.by_end[ev_.track[at]].push_back(span);
      }
      for (auto& [track, spans] : index.by_start) {
        std::sort(spans.begin(), spans.end(), [](const auto& x, const auto& y) { return x.start < y.start; });
      }
      for (auto& [track, spans] : index.by_end) {
        std::sort(spans.begin(), spans.end(), [](const auto& x, const auto& y) { return x.end < y.end; });
      }
      indexed_[selection] = true;
    }
    return indexes_[selection];
  }

  bool sequence_holds(EventIndex i, const SequencePredicate& sequence) {
    EventIndex at = anchor(i);
    if (at == kNone) return false;
    const TrackIndex& index = track_index(sequence.selection);
    const uint32_t track = ev_.track[at];
    const int64_t start = ev_.ts_ns[at], end = ev_.end_ns(at);
    switch (sequence.kind) {
      case SequenceKind::FollowedBy: {
        auto found = index.by_start.find(track);
        if (found == index.by_start.end()) return false;
        const auto& spans = found->second;
        auto it = std::lower_bound(spans.begin(), spans.end(), end - kNestingToleranceNs,
                                   [](const TrackIndex::Span& s, int64_t t) { return s.start < t; });
        for (; it != spans.end() && (sequence.within_step || it->start - end <= sequence.within_ns); ++it) {
          if (it->event == i || it->start < start) continue;
          if (!sequence.within_step) return true;
          return step(it->event) == step(i) && step(i) != kNone;  // the next one decides
        }
        return false;
      }
      case SequenceKind::PrecededBy: {
        auto found = index.by_end.find(track);
        if (found == index.by_end.end()) return false;
        const auto& spans = found->second;
        auto it = std::upper_bound(spans.begin(), spans.end(), start + kNestingToleranceNs,
                                   [](int64_t t, const TrackIndex::Span& s) { return t < s.end; });
        while (it != spans.begin()) {
          --it;
          if (!sequence.within_step && start - it->end > sequence.within_ns) return false;
          if (it->event == i || it->start > start) continue;
          if (!sequence.within_step) return true;
          return step(it->event) == step(i) && step(i) != kNone;  // the previous one decides
        }
        return false;
      }
      case SequenceKind::Contains: {
        auto found = index.by_start.find(track);
        if (found == index.by_start.end()) return false;
        const auto& spans = found->second;
        auto it = std::lower_bound(spans.begin(), spans.end(), start - kNestingToleranceNs,
                                   [](const TrackIndex::Span& s, int64_t t) { return s.start < t; });
        for (; it != spans.end() && it->start <= end + kNestingToleranceNs; ++it) {
          if (it->event != i && it->end <= end + kNestingToleranceNs) return true;
        }
        return false;
      }
    }
    return false;
  }

  std::vector<EventIndex> select(const Selection& selection) {
    std::vector<EventIndex> out;
    if (!selection.union_of.empty()) {
      for (size_t part : selection.union_of) out.insert(out.end(), selected_[part].begin(), selected_[part].end());
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    }
    std::optional<NameCache> name, exclude, inside, not_inside;
    if (selection.name_match) name.emplace(*selection.name_match, tl_.strings);
    if (selection.name_exclude) exclude.emplace(*selection.name_exclude, tl_.strings);
    if (selection.inside) inside.emplace(*selection.inside, tl_.strings);
    if (selection.not_inside) not_inside.emplace(*selection.not_inside, tl_.strings);
    const size_t count = ev_.size();
    const std::vector<uint8_t> charged =
        selection.charged_idle != 0 ? charged_culprits(a_, selection.charged_idle) : std::vector<uint8_t>();
    for (EventIndex i = 0; i < count; ++i) {
      if (selection.kinds != 0 && ((selection.kinds >> static_cast<unsigned>(ev_.kind[i])) & 1u) == 0) continue;
      if (name && !name->matches(ev_.name[i])) continue;
      if (exclude && exclude->matches(ev_.name[i])) continue;
      if ((selection.families | selection.exclude_families) != 0) {
        const uint32_t family = 1u << static_cast<unsigned>(a_.family_of(i));
        if (selection.families != 0 && (selection.families & family) == 0) continue;
        if ((selection.exclude_families & family) != 0) continue;
      }
      if (selection.min_dur_ns >= 0 && ev_.dur_ns[i] < selection.min_dur_ns) continue;
      if (selection.max_dur_ns >= 0 && ev_.dur_ns[i] >= selection.max_dur_ns) continue;
      {
        uint32_t s = step(i);
        // Warm-up steps and a cut-short last step are in no per-step figure; `in_warmup` asks for them.
        if (selection.in_warmup ? (s == kNone || !a_.steps[s].warmup) : (s != kNone && !a_.is_steady(s))) continue;
        if ((selection.in_step || selection.after_first_step) && s == kNone) continue;
        if (selection.after_first_step && s == 0) continue;
      }
      if (selection.waits_for_gpu && !waits_for_gpu(i)) continue;
      if (selection.charged_idle != 0 && !charged[i]) continue;
      bool ok = true;
      for (const auto& predicate : selection.args) {
        if (!arg_holds(i, predicate)) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      if (inside && !any_ancestor(i, *inside)) continue;
      if (not_inside && any_ancestor(i, *not_inside)) continue;
      for (const auto& sequence : selection.sequences) {
        if (sequence_holds(i, sequence) == sequence.negate) {
          ok = false;
          break;
        }
      }
      if (ok) out.push_back(i);
    }
    return out;
  }

  // ---- sites ------------------------------------------------------------------------------------

  EventIndex op_of(EventIndex i) const {
    EventKind kind = ev_.kind[i];
    if (is_gpu_side(kind)) return a_.cpu_op_of(i);
    if (kind == EventKind::Runtime || kind == EventKind::Driver) {
      // A call made straight from Python (torch.cuda.synchronize()) has no CPU op: it is its own site.
      EventIndex op = a_.cpu_op_of(i);
      return op != kNone ? op : i;
    }
    return i;
  }

  std::string source_text(EventIndex i) const {
    auto source = a_.user_source(i);
    if (!source) return {};
    return source->file + ":" + std::to_string(source->line);
  }

  std::string site_key(EventIndex i, SiteKey key) const {
    switch (key) {
      case SiteKey::Op: {
        EventIndex op = op_of(i);
        return op == kNone ? std::string() : std::string(tl_.name(op));
      }
      case SiteKey::OpChain: {
        std::string chain;
        for (EventIndex e : a_.op_chain(i)) {
          if (ev_.kind[e] == EventKind::CpuOp) chain += std::string(tl_.name(e)) + " > ";
        }
        return chain;
      }
      case SiteKey::Kernel: return is_gpu_side(ev_.kind[i]) ? std::string(tl_.name(i)) : std::string();
      case SiteKey::Name: return std::string(tl_.name(i));
      case SiteKey::Source: return source_text(i);
      case SiteKey::Bytes: {
        auto bytes = tl_.arg_int(i, "bytes");
        return bytes ? std::to_string(*bytes) : std::string();
      }
    }
    return {};
  }

  std::vector<Group> make_groups(const CompiledRule& rule) const {
    const auto& events = selected_[rule.primary];
    if (events.empty()) return {};
    if (rule.group_by.empty()) return {Group{events}};
    std::vector<Group> groups;
    std::unordered_map<std::string, size_t> index;
    for (EventIndex e : events) {
      std::string key;
      for (SiteKey k : rule.group_by) {
        key += site_key(e, k);
        key += '\x1f';
      }
      auto [it, inserted] = index.emplace(std::move(key), groups.size());
      if (inserted) groups.emplace_back();
      groups[it->second].events.push_back(e);
    }
    return groups;
  }

  // ---- metrics ----------------------------------------------------------------------------------

  const std::vector<EventIndex>& events_of(const Metric& metric) const {
    return metric.site_scoped ? groups_[group_].events : selected_[metric.selection];
  }

  double builtin(const std::string& name) const {
    if (name == "steps") return static_cast<double>(a_.steady_step_count());
    if (name == "step_period_ms") return step_period_ms_;
    if (name == "median_step_ms") return a_.median_step_ns() / 1e6;
    if (name == "warmup_steps") return static_cast<double>(a_.warmup_step_count());
    if (name == "max_step_ms" || name == "first_step_ms" || name == "warmup_ms") {
      if (a_.steps.empty()) return 0;
      if (name == "first_step_ms") return static_cast<double>(a_.steps.front().period_ns) / 1e6;
      int64_t longest = 0, warmup = 0;
      for (uint32_t s = 0; s < a_.steps.size(); ++s) {
        if (a_.steps[s].warmup) warmup += a_.steps[s].period_ns;
        if (a_.is_steady(s)) longest = std::max(longest, a_.steps[s].period_ns);
      }
      return static_cast<double>(name == "warmup_ms" ? warmup : longest) / 1e6;
    }
    if (name == "has_gpu") return a_.devices.empty() ? 0 : 1;
    if (name == "gpu_busy_pct") return gpu_busy_pct();
    if (name == "compute_capability" || name == "gpu_memory_bytes") {
      double best = -1;
      for (const auto& device : tl_.devices) {
        bool active = a_.devices.empty() ||
                      std::find(a_.devices.begin(), a_.devices.end(), device.id) != a_.devices.end();
        if (!active) continue;
        double value = name == "gpu_memory_bytes"
                           ? static_cast<double>(device.total_global_mem)
                           : (device.compute_major < 0 ? -1.0 : device.compute_major + device.compute_minor / 10.0);
        best = std::max(best, value);
      }
      return best;
    }
    return kNaN;
  }

  // Busy share of the steady steps' windows, averaged over devices.
  double gpu_busy_pct() const {
    if (a_.steps.empty() || a_.busy.empty()) return 0;
    int64_t length = 0;
    for (uint32_t s = 0; s < a_.steps.size(); ++s) {
      if (a_.is_steady(s)) length += a_.step_windows[s].end_ns - a_.step_windows[s].start_ns;
    }
    if (length <= 0) return 0;
    double total = 0;
    for (const auto& intervals : a_.busy) {
      int64_t busy = 0;
      for (uint32_t s = 0; s < a_.steps.size(); ++s) {
        if (!a_.is_steady(s)) continue;
        const Interval& window = a_.step_windows[s];
        // Busy intervals are sorted and disjoint: start at the first one ending after the window opens.
        auto it = std::upper_bound(intervals.begin(), intervals.end(), window.start_ns,
                                   [](int64_t t, const Interval& i) { return t < i.end_ns; });
        for (; it != intervals.end() && it->start_ns < window.end_ns; ++it) {
          busy += std::min(it->end_ns, window.end_ns) - std::max(it->start_ns, window.start_ns);
        }
      }
      total += static_cast<double>(busy) / static_cast<double>(length);
    }
    return total / static_cast<double>(a_.busy.size()) * 100.0;
  }

  // Gaps of the ledger a metric counts, per group (site-scoped) or as one list.
  const std::vector<std::vector<uint32_t>>& idle_gaps(size_t metric_index) {
    if (idle_ready_[metric_index]) return idle_gaps_[metric_index];
    const Metric& metric = rule_->metrics[metric_index];
    auto& out = idle_gaps_[metric_index];
    const bool per_group = metric.culprits == Metric::Culprits::Site && metric.site_scoped;
    out.assign(per_group ? groups_.size() : 1, {});
    // Host events that stand for a culprit: the selected events, their launch calls and CPU ops.
    std::unordered_map<EventIndex, uint32_t> anchors;
    if (metric.culprits != Metric::Culprits::Any) {
      auto add = [&](EventIndex e, uint32_t group) {
        anchors.emplace(e, group);
        EventKind kind = ev_.kind[e];
        if (is_gpu_side(kind) || kind == EventKind::Runtime || kind == EventKind::Driver) {
          if (EventIndex at = anchor(e); at != kNone) anchors.emplace(at, group);
          // Only a real CPU op stands for the culprit: an enclosing annotation would swallow every gap below it.
          if (EventIndex op = a_.cpu_op_of(e); op != kNone && ev_.kind[op] == EventKind::CpuOp) anchors.emplace(op, group);
        }
      };
      if (per_group) {
        for (uint32_t g = 0; g < groups_.size(); ++g) {
          for (EventIndex e : groups_[g].events) add(e, g);
        }
      } else {
        for (EventIndex e : selected_[metric.culprit_selection]) add(e, 0);
      }
    }
    for (uint32_t k = 0; k < a_.idle.size(); ++k) {
      const IdleGap& gap = a_.idle[k];
      if (((metric.idle_causes >> static_cast<unsigned>(gap.cause)) & 1u) == 0) continue;
      if (!a_.is_steady(gap.step)) continue;
      if (!metric.include_claimed && claimed_[k]) continue;
      if (metric.max_stretch_ns >= 0 && stretch_ns_[k] >= metric.max_stretch_ns) continue;
      if (metric.min_stretch_ns >= 0 && stretch_ns_[k] < metric.min_stretch_ns) continue;
      if (metric.culprits == Metric::Culprits::Any) {
        out[0].push_back(k);
        continue;
      }
      EventIndex current = gap.culprit;
      for (int depth = 0; current != kNone && current < ev_.size() && depth < kMaxAncestorDepth; ++depth) {
        auto found = anchors.find(current);
        if (found != anchors.end()) {
          out[found->second].push_back(k);
          break;
        }
        current = parent(current);
      }
    }
    if (metric.refill) extend_to_refill(metric, out);
    idle_ready_[metric_index] = true;
    return out;
  }

  // After a blocking call returns, the GPU stays idle until the host has queued new work; the ledger charges
  // that refill time to whatever the host does meanwhile (cpu-work, untraced, launch-bound). It is the
  // blocking call's cost too, so a matched gap takes the following gaps of its idle stretch up to the host's
  // next launch — never across host work that launches nothing (its own cause, host-bound CPU work) or a
  // gap with a culprit of its own, and nothing when the host launches nothing before the stretch ends.
  void extend_to_refill(const Metric& metric, std::vector<std::vector<uint32_t>>& out) const {
    std::vector<uint32_t> owner(a_.idle.size(), kNone);
    for (uint32_t g = 0; g < out.size(); ++g) {
      for (uint32_t k : out[g]) owner[k] = g;
    }
    const uint32_t refill_causes = (1u << static_cast<unsigned>(IdleCause::CpuWork)) |
                                   (1u << static_cast<unsigned>(IdleCause::Untraced)) |
                                   (1u << static_cast<unsigned>(IdleCause::LaunchBound));
    const size_t count = a_.idle.size();
    std::vector<uint8_t> matched(count, 0);
    for (uint32_t k = 0; k < count; ++k) matched[k] = owner[k] != kNone;
    for (uint32_t k = 0; k < count; ++k) {
      if (!matched[k]) continue;
      // Walk the rest of the stretch while the host is on its way to a launch, up to host work that launches
      // nothing or a culprit of its own. A stretch that ends without the host ever launching again (a
      // harness's sync, then nothing) was not refilled by anything: it adds no refill.
      uint32_t last_launch = k, last = k;
      bool stopped = false;
      for (uint32_t next = k + 1; next < count; ++next) {
        const IdleGap& following = a_.idle[next];
        if (!contiguous(a_.idle[next - 1], following)) break;  // the end of the stretch
        const bool eligible = owner[next] == kNone &&
                              ((refill_causes >> static_cast<unsigned>(following.cause)) & 1u) != 0 &&
                              (metric.include_claimed || !claimed_[next]) && following.queues_work;
        if (!eligible) {
          stopped = true;
          break;
        }
        last = next;
        if (following.launching) last_launch = next;
      }
      const uint32_t end = stopped || last_launch != k ? last : k;
      for (uint32_t next = k + 1; next <= end; ++next) {
        owner[next] = owner[k];
        out[owner[k]].push_back(next);
      }
    }
    for (auto& gaps : out) std::sort(gaps.begin(), gaps.end());
  }

  const std::vector<uint32_t>& gaps_for(size_t metric_index) {
    const auto& gaps = idle_gaps(metric_index);
    return gaps.size() == 1 ? gaps[0] : gaps[group_];
  }

  double compute(size_t metric_index) {
    const Metric& metric = rule_->metrics[metric_index];
    const double steps = static_cast<double>(steps_);
    switch (metric.kind) {
      case MetricKind::Count: return static_cast<double>(events_of(metric).size()) / steps;
      case MetricKind::Time:
      case MetricKind::ShareOfStep: {
        double total = 0;
        for (EventIndex e : events_of(metric)) total += static_cast<double>(ev_.dur_ns[e]);
        double ms = total / steps / 1e6;
        if (metric.kind == MetricKind::Time) return ms;
        return step_period_ms_ > 0 ? ms / step_period_ms_ * 100.0 : 0.0;
      }
      case MetricKind::Max: {
        int64_t longest = 0;
        for (EventIndex e : events_of(metric)) longest = std::max(longest, ev_.dur_ns[e]);
        return static_cast<double>(longest) / 1e6;
      }
      case MetricKind::Bytes: {
        double total = 0;
        for (EventIndex e : events_of(metric)) {
          if (auto bytes = tl_.arg_double(e, "bytes")) total += *bytes;
        }
        return total / steps;
      }
      case MetricKind::StepsPresent: {
        std::vector<uint8_t> present(a_.steps.size(), 0);
        size_t count = 0;
        for (EventIndex e : events_of(metric)) {
          uint32_t s = step(e);
          if (s < present.size() && !present[s]) {
            present[s] = 1;
            ++count;
          }
        }
        // Over the steady steps, the only ones whose events are selected (warm-up and a cut-short last step
        // never are).
        return a_.steps.empty() ? 0.0 : static_cast<double>(count) / static_cast<double>(steps_) * 100.0;
      }
      case MetricKind::MaxArg: {
        double best = kNaN;
        for (EventIndex e : events_of(metric)) {
          if (auto value = tl_.arg_double(e, metric.arg_key)) best = std::isnan(best) ? *value : std::max(best, *value);
        }
        return best;
      }
      case MetricKind::Idle: {
        const auto& gaps = gaps_for(metric_index);
        if (metric.idle_stat == IdleStat::PerStep) {
          double total = 0;
          for (uint32_t k : gaps) total += static_cast<double>(a_.idle[k].duration_ns());
          return total / steps / 1e6;
        }
        if (metric.idle_stat == IdleStat::MaxGap) {
          int64_t longest = 0;
          for (uint32_t k : gaps) longest = std::max(longest, a_.idle[k].duration_ns());
          return static_cast<double>(longest) / 1e6;
        }
        // GapEveryStep: the smallest, over steps, of each step's longest gap.
        std::vector<int64_t> longest(a_.steps.size(), 0);
        for (uint32_t k : gaps) {
          uint32_t s = a_.idle[k].step;
          if (s < longest.size()) longest[s] = std::max(longest[s], a_.idle[k].duration_ns());
        }
        if (longest.empty()) return 0;
        return static_cast<double>(*std::min_element(longest.begin(), longest.end())) / 1e6;
      }
      case MetricKind::Ratio: {
        double numerator = value(metric.operands[0]), denominator = value(metric.operands[1]);
        if (std::isnan(numerator) || std::isnan(denominator) || denominator == 0) return kNaN;
        return numerator / denominator;
      }
      case MetricKind::Sum: {
        double total = 0;
        for (size_t operand : metric.operands) {
          double v = value(operand);
          if (!std::isnan(v)) total += v;
        }
        return total;
      }
      case MetricKind::Percent: {
        double ms = value(metric.operands[0]);
        return step_period_ms_ > 0 && !std::isnan(ms) ? ms / step_period_ms_ * 100.0 : 0.0;
      }
      case MetricKind::Builtin: return builtin(metric.builtin);
      case MetricKind::Threshold: return thresholds_[metric.threshold];
      case MetricKind::Literal: return metric.literal;
    }
    return kNaN;
  }

  bool depends_on_group(size_t metric_index) const {
    const Metric& metric = rule_->metrics[metric_index];
    if (metric.site_scoped) return true;
    for (size_t operand : metric.operands) {
      if (depends_on_group(operand)) return true;
    }
    return false;
  }

  double value(size_t metric_index) {
    if (group_values_[metric_index]) return *group_values_[metric_index];
    if (trace_values_[metric_index]) return *trace_values_[metric_index];
    double result = compute(metric_index);
    if (depends_on_group(metric_index)) group_values_[metric_index] = result;
    else trace_values_[metric_index] = result;
    return result;
  }

  bool holds(const Condition& condition) {
    switch (condition.kind) {
      case Condition::Kind::All:
        for (const auto& child : condition.children) {
          if (!holds(child)) return false;
        }
        return true;
      case Condition::Kind::Any:
        for (const auto& child : condition.children) {
          if (holds(child)) return true;
        }
        return false;
      case Condition::Kind::Not: return !holds(condition.children[0]);
      case Condition::Kind::Truthy: {
        double v = value(condition.left);
        return !std::isnan(v) && v != 0;
      }
      case Condition::Kind::Compare: {
        double left = value(condition.left), right = value(condition.right);
        if (std::isnan(left) || std::isnan(right)) return false;  // undefined values never pass
        switch (condition.op) {
          case CompareOp::Lt: return left < right;
          case CompareOp::Le: return left <= right;
          case CompareOp::Gt: return left > right;
          case CompareOp::Ge: return left >= right;
          case CompareOp::Eq: return left == right;
          case CompareOp::Ne: return left != right;
        }
      }
    }
    return false;
  }

  // ---- findings ---------------------------------------------------------------------------------

  std::string track_text(EventIndex i) const {
    uint32_t t = ev_.track[i];
    if (t >= tl_.tracks.size()) return {};
    const Track& track = tl_.tracks[t];
    if (track.kind == TrackKind::Gpu) {
      return "GPU " + std::to_string(track.device) + " stream " + std::to_string(track.stream);
    }
    return "pid " + std::string(tl_.strings.view(track.pid_text)) + " tid " + std::string(tl_.strings.view(track.tid_text));
  }

  std::string idle_breakdown(size_t top = 3) {
    // The causes of the gaps counted by the rule's first idle metric, largest first.
    for (size_t m = 0; m < rule_->metrics.size(); ++m) {
      if (rule_->metrics[m].kind != MetricKind::Idle) continue;
      double per_cause[5] = {0, 0, 0, 0, 0};
      for (uint32_t k : gaps_for(m)) per_cause[static_cast<int>(a_.idle[k].cause)] += static_cast<double>(a_.idle[k].duration_ns());
      std::vector<std::pair<double, int>> order;
      for (int c = 0; c < 5; ++c) {
        if (per_cause[c] > 0) order.emplace_back(per_cause[c], c);
      }
      std::sort(order.rbegin(), order.rend());
      std::string text;
      for (size_t n = 0; n < order.size() && n < top; ++n) {
        if (!text.empty()) text += ", ";
        text += std::string(to_string(static_cast<IdleCause>(order[n].second))) + " " +
                format_number(order[n].first / static_cast<double>(steps_) / 1e6) + " ms/step";
      }
      return text.empty() ? "none" : text;
    }
    return "none";
  }

  // The culprits of the gaps counted by the rule's first idle metric, by name, largest first.
  std::string idle_culprits(size_t top = 3) {
    for (size_t m = 0; m < rule_->metrics.size(); ++m) {
      if (rule_->metrics[m].kind != MetricKind::Idle) continue;
      return culprit_breakdown(a_, gaps_for(m), static_cast<double>(steps_), top, &format_number);
    }
    return "none";
  }

  // `brief` renders a short_message: names longer than kBriefName lose their middle (numbers never do)
  // and the idle causes and culprits name only the largest one.
  std::string render(const Template& parts, const Site& site, bool brief = false) {
    constexpr size_t kBriefName = 32;
    auto name = [&](const std::string& text) { return brief ? elide_middle(text, kBriefName) : text; };
    std::string out;
    for (const auto& part : parts) {
      switch (part.kind) {
        case TemplatePart::Kind::Literal: out += part.literal; break;
        case TemplatePart::Kind::Metric: {
          double v = value(part.metric);
          out += part.as_bytes ? format_bytes(v) : format_number(v);
          break;
        }
        case TemplatePart::Kind::SiteOp: out += site.op.empty() ? "(unknown op)" : name(site.op); break;
        case TemplatePart::Kind::SiteKernel: out += name(site.kernel); break;
        case TemplatePart::Kind::SiteName: out += name(site.detail); break;
        case TemplatePart::Kind::SiteSource:
          if (site.source) {
            out += site.source->file + ":" + std::to_string(site.source->line);
          } else if (out.size() >= 4 && out.compare(out.size() - 4, 4, " at ") == 0) {
            out.erase(out.size() - 4);  // "… at {site.source}" without a stack: say nothing rather than "at (no Python stack)"
          } else {
            out += "(no Python stack)";
          }
          break;
        case TemplatePart::Kind::SiteChain: {
          std::string chain;
          for (const auto& op : site.op_chain) chain += (chain.empty() ? "" : " > ") + op;
          out += name(chain);
          break;
        }
        case TemplatePart::Kind::Idle: out += idle_breakdown(brief ? 1 : 3); break;
        case TemplatePart::Kind::IdleCulprits: out += idle_culprits(brief ? 1 : 3); break;
      }
    }
    // "1 times per step" reads as a mistake.
    for (size_t at = out.find("1 times per"); at != std::string::npos; at = out.find("1 times per", at + 1)) {
      if (at == 0 || (!std::isdigit(static_cast<unsigned char>(out[at - 1])) && out[at - 1] != '.')) out.replace(at, 7, "once");
    }
    return out;
  }

  Finding make_finding(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options) {
    const Group& group = groups_[group_];
    Finding finding;
    finding.rule_id = info.id;
    finding.rule_name = info.name;
    finding.severity = info.severity;
    if (auto found = options.severities.find(info.id); found != options.severities.end()) finding.severity = found->second;
    finding.tags = info.tags;
    finding.fix = info.fix;
    finding.short_fix = info.short_fix;
    finding.trace_path = tl_.path;
    finding.trace_rank = tl_.rank;

    // Grouped rules describe the site of their events; whole-trace rules have no single site.
    const EventIndex representative = group.events.front();
    if (!rule.group_by.empty()) {
      EventIndex op = op_of(representative);
      if (op != kNone) finding.site.op = std::string(tl_.name(op));
      if (is_gpu_side(ev_.kind[representative])) finding.site.kernel = std::string(tl_.name(representative));
      // CPU ops only: annotations such as ProfilerStep#N change from step to step and recording to recording.
      for (EventIndex e : a_.op_chain(representative)) {
        if (ev_.kind[e] == EventKind::CpuOp) finding.site.op_chain.emplace_back(tl_.name(e));
      }
      finding.site.source = a_.user_source(representative);
      finding.site.detail = std::string(tl_.name(representative));
    } else {
      finding.site.detail = "whole trace";
    }
    if (std::find(rule.group_by.begin(), rule.group_by.end(), SiteKey::Bytes) != rule.group_by.end()) {
      if (auto bytes = tl_.arg_double(representative, "bytes")) finding.site.detail += ", " + format_bytes(*bytes);
    }

    // Evidence: the longest occurrences, so they are easy to spot in a viewer.
    std::vector<EventIndex> longest = group.events;
    size_t keep = std::min<size_t>(3, longest.size());
    std::partial_sort(longest.begin(), longest.begin() + static_cast<std::ptrdiff_t>(keep), longest.end(),
                      [&](EventIndex x, EventIndex y) {
                        return ev_.dur_ns[x] != ev_.dur_ns[y] ? ev_.dur_ns[x] > ev_.dur_ns[y] : x < y;
                      });
    for (size_t k = 0; k < keep; ++k) {
      EventIndex e = longest[k];
      Evidence evidence;
      evidence.step = step(e);
      if (evidence.step < a_.steps.size()) evidence.step_number = a_.steps[evidence.step].number;
      evidence.ts_ns = ev_.ts_ns[e];
      evidence.file_ts_ns = tl_.file_origin_ns + ev_.ts_ns[e];
      evidence.dur_ns = ev_.dur_ns[e];
      evidence.event = std::string(tl_.name(e));
      evidence.track = track_text(e);
      finding.evidence.push_back(std::move(evidence));
    }

    auto metric_named = [&](std::string_view name) {
      for (size_t m = 0; m < rule.metrics.size(); ++m) {
        if (rule.metrics[m].name == name) return value(m);
      }
      return 0.0;
    };
    finding.count_per_step = metric_named("count");
    finding.time_ms_per_step = metric_named("time_ms");
    finding.steps_present_pct = metric_named("steps_present_pct");

    // Time terms count only GPU ops no earlier finding claimed, within the GPU bound and the step that are
    // left (step_claims.h); what is asked for beyond that is said in the method.
    double gpu_ms = 0, other_ms = 0;
    std::vector<const std::vector<EventIndex>*> gpu_events;
    for (const auto& term : rule.saving) {
      if (term.when && !holds(*term.when)) continue;
      if (rule.metrics[term.metric].kind == MetricKind::Time) {
        const auto& events = events_of(rule.metrics[term.metric]);
        StepClaims::Time time = step_claims_.time_of(events, static_cast<double>(steps_));
        gpu_ms += term.factor * time.gpu_ms;
        other_ms += term.factor * time.host_ms;
        if (term.factor != 0) gpu_events.push_back(&events);
        continue;
      }
      double v = value(term.metric);
      if (!std::isnan(v)) other_ms += term.factor * v;
    }
    const StepClaims::Grant granted = step_claims_.grant(gpu_ms, other_ms);
    finding.saving_ms_per_step = granted.total_ms;
    finding.saving_pct = step_period_ms_ > 0 ? finding.saving_ms_per_step / step_period_ms_ * 100.0 : 0.0;
    finding.saving_method = rule.saving_method;
    if (granted.total_ms + 5e-4 < std::max(0.0, gpu_ms + other_ms)) {
      finding.saving_method += " " + limited_note(gpu_ms, other_ms, granted);
    }
    finding.confidence = rule.confidence;
    for (size_t t = 0; t < rule.transform.steps.size(); ++t) {
      finding.fixes.push_back({rule.transform.steps[t], transform_events(rule, rule.transform.selections[t], group),
                               info.id, rule.transform.method});
    }
    // The noise floor: a rule that estimates a saving reports only savings above both minimums (rules
    // whose saving is 0 by design report facts, never fail a gate, and are exempt).
    below_noise_floor_ = false;
    const bool estimates_saving =
        std::any_of(rule.saving.begin(), rule.saving.end(), [](const SavingTerm& t) { return t.factor != 0; });
    if (estimates_saving) {
      double min_ms = 0, min_pct = 0;
      for (size_t t = 0; t < rule.thresholds.size(); ++t) {
        if (rule.thresholds[t].name == kMinSavingMs) min_ms = thresholds_[t];
        if (rule.thresholds[t].name == kMinSavingPct) min_pct = thresholds_[t];
      }
      finding.noise_floor_ms = std::max(min_ms, min_pct / 100.0 * step_period_ms_);
      if (finding.saving_ms_per_step < min_ms || finding.saving_pct < min_pct) {
        below_noise_floor_ = true;
        return finding;  // claims nothing
      }
    }
    finding.message = render(rule.message, finding.site);
    if (!rule.short_message.empty()) finding.short_message = render(rule.short_message, finding.site, /*brief=*/true);

    step_claims_.commit(gpu_events, granted);
    // Claim the ledger gaps this finding counted, so later rules cannot count them again.
    for (size_t m = 0; m < rule.metrics.size(); ++m) {
      const Metric& metric = rule.metrics[m];
      if (metric.kind != MetricKind::Idle || metric.include_claimed) continue;
      for (uint32_t k : gaps_for(m)) {
        if (!claimed_[k]) {
          claimed_[k] = 1;
          finding.idle_gaps.push_back(k);
        }
      }
    }
    std::sort(finding.idle_gaps.begin(), finding.idle_gaps.end());
    return finding;
  }

  // Why a saving is below what the rule's terms ask for, for the finding's method.
  std::string limited_note(double gpu_ms, double other_ms, const StepClaims::Grant& granted) const {
    std::string note = "Limited to " + format_number(granted.total_ms) + " of " + format_number(gpu_ms + other_ms) +
                       " ms per step:";
    if (granted.gpu_ms + 5e-4 < gpu_ms) {
      note += " faster GPU work shortens this step by at most " + format_number(a_.gpu_bound_ns_per_step() / 1e6) +
              " ms (the rest of the step is the host's own work), shared with earlier findings;";
    }
    if (granted.total_ms + 5e-4 < granted.gpu_ms + other_ms) note += " earlier findings claimed the rest of the step;";
    note.back() = '.';
    return note;
  }

  // A transform's events: the group's, or (`select:`) every event of another selection.
  std::vector<EventIndex> transform_events(const CompiledRule& rule, const std::string& selection, const Group& group) {
    for (size_t s = 0; !selection.empty() && s < rule.selections.size(); ++s) {
      if (rule.selections[s].name == selection) return selected_[s];
    }
    return group.events;
  }

  const Analysis& a_;
  const Timeline& tl_;
  const Events& ev_;
  std::vector<uint8_t>& claimed_;
  StepClaims& step_claims_;
  std::vector<int64_t> stretch_ns_;  // per ledger entry: length of the idle stretch it belongs to
  size_t steps_ = 1;
  double step_period_ms_ = 0;

  const CompiledRule* rule_ = nullptr;
  std::vector<double> thresholds_;
  bool below_noise_floor_ = false;
  std::vector<std::vector<EventIndex>> selected_;
  std::vector<TrackIndex> indexes_;
  std::vector<bool> indexed_;
  std::vector<Group> groups_;
  size_t group_ = 0;
  std::vector<std::vector<std::vector<uint32_t>>> idle_gaps_;
  std::vector<bool> idle_ready_;
  std::vector<std::optional<double>> group_values_;
  std::vector<std::optional<double>> trace_values_;
};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool mentions(const std::vector<std::string>& list, const RuleInfo& info) {
  for (const auto& entry : list) {
    std::string wanted = lower(entry);
    if (wanted == lower(info.id) || wanted == lower(info.name)) return true;
    for (const auto& tag : info.tags) {
      if (wanted == lower(tag)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Finding> evaluate(const RuleSet& rules, const Analysis& analysis, const EvaluateOptions& options,
                              Coverage* coverage) {
  std::vector<Finding> findings;
  if (analysis.timeline == nullptr) return findings;
  // What this trace offers the rules.
  const Timeline& timeline = *analysis.timeline;
  const bool has_gpu = !analysis.devices.empty();
  bool has_stacks = false;
  for (EventKind kind : timeline.events.kind) {
    if (kind == EventKind::PythonFunction) {
      has_stacks = true;
      break;
    }
  }
  if (!has_stacks) has_stacks = has_call_stacks(timeline);
  bool has_properties = false;
  for (const DeviceInfo& device : timeline.devices) has_properties = has_properties || device.compute_major >= 0;
  Coverage counted;
  std::vector<uint8_t> claimed(analysis.idle.size(), 0);
  StepClaims step_claims(analysis);
  Evaluator evaluator(analysis, claimed, step_claims);
  // Root causes (`order: first`) claim idle time before the rules for its symptoms; catch-all rules
  // (`order: last`) run after the specific ones and see only the idle time left unclaimed.
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t r = 0; r < rules.infos_.size(); ++r) {
      const RuleInfo& info = rules.infos_[r];
      const CompiledRule& rule = *rules.compiled_[r];
      const int rule_pass = rule.order_first ? 0 : rule.order_last ? 2 : 1;
      if (rule_pass != pass) continue;
      if (!options.only.empty() && !mentions(options.only, info)) continue;
      if (mentions(options.skip, info)) continue;
      if ((info.needs & kNeedsGpu) && !has_gpu) {
        ++counted.no_gpu;
        counted.not_run.emplace_back(info.id, "no GPU activity");
        continue;
      }
      if ((info.needs & kNeedsStacks) && !has_stacks) {
        ++counted.no_stacks;
        counted.not_run.emplace_back(info.id, "no Python stacks");
        continue;
      }
      if ((info.needs & kNeedsDeviceProperties) && !has_properties) {
        ++counted.no_device_properties;
        counted.not_run.emplace_back(info.id, "no device properties");
        continue;
      }
      // Every rule measures steady steps (even the warm-up rule compares with their period).
      if (!analysis.steady_state) {
        ++counted.no_steady_state;
        counted.not_run.emplace_back(info.id, "no steady step");
        continue;
      }
      ++counted.ran;
      auto found = evaluator.run(info, rule, options);
      findings.insert(findings.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    }
  }
  if (options.predict) predict_findings(analysis, findings);  // predictions by replay (predict.cpp)
  std::sort(counted.not_run.begin(), counted.not_run.end());
  if (coverage) *coverage = counted;
  return findings;
}

}  // namespace ptadvise
