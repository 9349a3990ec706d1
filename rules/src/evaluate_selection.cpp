// Selections (docs/RULE_LANGUAGE.md "Selections"): the events of a trace a rule's selector matches — kinds,
// names, kernel families, durations, steps, charged idle, args, ancestors and the sequence predicates.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "evaluator.h"
#include "ledger_text.h"

namespace ptadvise::rule_evaluation {

namespace {

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

// Sorts `events`, made of ascending runs starting at `run_starts` (each a list of distinct events in
// order), by merging the runs pairwise: the same result as a sort, in O(n log runs).
void merge_runs(std::vector<EventIndex>& events, std::vector<size_t> run_starts) {
  run_starts.push_back(events.size());
  while (run_starts.size() > 2) {
    std::vector<size_t> merged;
    for (size_t r = 0; r + 1 < run_starts.size(); r += 2) {
      merged.push_back(run_starts[r]);
      if (r + 2 < run_starts.size()) {
        const auto begin = events.begin();
        std::inplace_merge(begin + static_cast<std::ptrdiff_t>(run_starts[r]),
                           begin + static_cast<std::ptrdiff_t>(run_starts[r + 1]),
                           begin + static_cast<std::ptrdiff_t>(run_starts[r + 2]));
      }
    }
    merged.push_back(events.size());
    run_starts = std::move(merged);
  }
}

}  // namespace

bool Evaluator::any_ancestor(EventIndex i, NameCache& cache) const {
  EventIndex start = anchor(i);
  if (start == kNone) return false;
  EventIndex current = is_gpu_side(ev_.kind[i]) ? start : parent(start);
  for (int depth = 0; current != kNone && depth < kMaxAncestorDepth; ++depth) {
    if (cache.matches(ev_.name[current])) return true;
    current = parent(current);
  }
  return false;
}

std::optional<std::string> Evaluator::arg_text(EventIndex i, const ArgPredicate& predicate) const {
  auto value = tl_.arg_string(i, predicate.key);
  if (!value || !predicate.index) return value;
  auto elements = split_json_array(*value);
  if (static_cast<size_t>(*predicate.index) >= elements.size()) return std::nullopt;
  return unquote(elements[static_cast<size_t>(*predicate.index)]);
}

std::optional<double> Evaluator::arg_number(EventIndex i, const ArgPredicate& predicate) const {
  if (!predicate.index) {
    if (auto number = tl_.arg_double(i, predicate.key)) return number;
    return std::nullopt;
  }
  auto text = arg_text(i, predicate);
  return text ? to_number(*text) : std::nullopt;
}

bool Evaluator::arg_holds(EventIndex i, const ArgPredicate& predicate) const {
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

const TrackIndex& Evaluator::track_index(size_t selection) {
  if (!indexed_[selection]) {
    TrackIndex& index = indexes_[selection];
    // Each track's lists sized first: grown one span at a time, copying them cost more than the rest.
    std::unordered_map<uint32_t, size_t> spans_on;
    for (EventIndex e : selected_[selection]) {
      if (EventIndex at = anchor(e); at != kNone) ++spans_on[ev_.track[at]];
    }
    for (const auto& [track, count] : spans_on) {
      index.by_start[track].reserve(count);
      index.by_end[track].reserve(count);
    }
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

bool Evaluator::sequence_holds(EventIndex i, const SequencePredicate& sequence) {
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

std::vector<EventIndex> Evaluator::select(const Selection& selection) {
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
  const std::vector<uint8_t> charged =
      selection.charged_idle != 0 ? charged_culprits(a_, selection.charged_idle) : std::vector<uint8_t>();
  // A selection visits the events of the names it matches (events_by_name) or of its kinds
  // (events_by_kind), whichever are fewer, and sorts what it keeps back into event order when it took
  // them from several lists; one of any name and kind visits every event.
  size_t kinds_visited = 0;
  auto keep = [&](EventIndex i) {
    if (name && !name->matches(ev_.name[i])) return;
    if (exclude && exclude->matches(ev_.name[i])) return;
    if ((selection.families | selection.exclude_families) != 0) {
      const uint32_t family = 1u << static_cast<unsigned>(a_.family_of(i));
      if (selection.families != 0 && (selection.families & family) == 0) return;
      if ((selection.exclude_families & family) != 0) return;
    }
    if (selection.min_dur_ns >= 0 && ev_.dur_ns[i] < selection.min_dur_ns) return;
    if (selection.max_dur_ns >= 0 && ev_.dur_ns[i] >= selection.max_dur_ns) return;
    {
      uint32_t s = step(i);
      // Warm-up steps and a cut-short last step are in no per-step figure; `in_warmup` asks for them.
      if (selection.in_warmup ? (s == kNone || !a_.steps[s].warmup) : (s != kNone && !a_.is_steady(s))) return;
      if ((selection.in_step || selection.after_first_step) && s == kNone) return;
      if (selection.after_first_step && s == 0) return;
    }
    if (selection.waits_for_gpu && !a_.call_waits_for_op(i)) return;
    if (selection.charged_idle != 0 && !charged[i]) return;
    bool ok = true;
    for (const auto& predicate : selection.args) {
      if (!arg_holds(i, predicate)) {
        ok = false;
        break;
      }
    }
    if (!ok) return;
    if (inside && !any_ancestor(i, *inside)) return;
    if (not_inside && any_ancestor(i, *not_inside)) return;
    for (const auto& sequence : selection.sequences) {
      if (sequence_holds(i, sequence) == sequence.negate) {
        ok = false;
        break;
      }
    }
    if (ok) out.push_back(i);
  };
  if (selection.charged_idle != 0) {
    // The ledger charges few events among all: a pass over its flags visits those, in order.
    for (EventIndex i = 0; i < charged.size(); ++i) {
      if (charged[i] && (selection.kinds == 0 || ((selection.kinds >> static_cast<unsigned>(ev_.kind[i])) & 1u) != 0)) {
        keep(i);
      }
    }
    return out;
  }
  // The events a scan by kind would visit, against those of the names the selection matches.
  size_t kind_events = 0;
  for (size_t kind = 0; kind < lookup_.events_by_kind.size(); ++kind) {
    if (selection.kinds == 0 || ((selection.kinds >> kind) & 1u) != 0) {
      kind_events += lookup_.events_by_kind[kind].size();
    }
  }
  if (name && !lookup_.event_names.empty()) {
    std::vector<StringId> names;
    size_t name_events = 0;
    for (StringId id : lookup_.event_names) {
      if (selection.kinds != 0 && (lookup_.name_kinds[id] & selection.kinds) == 0) continue;
      if (!name->matches(id)) continue;
      names.push_back(id);
      name_events += lookup_.name_first[id + 1] - lookup_.name_first[id];
    }
    if (name_events * 8 <= kind_events) {
      std::vector<size_t> runs;  // each name's events come in order
      for (StringId id : names) {
        runs.push_back(out.size());
        for (uint32_t k = lookup_.name_first[id]; k < lookup_.name_first[id + 1]; ++k) {
          const EventIndex i = lookup_.events_by_name[k];
          if (selection.kinds == 0 || ((selection.kinds >> static_cast<unsigned>(ev_.kind[i])) & 1u) != 0) keep(i);
        }
      }
      if (names.size() > 1) merge_runs(out, std::move(runs));
      return out;
    }
  }
  if (selection.kinds == 0) {
    for (EventIndex i = 0; i < ev_.size(); ++i) keep(i);
    return out;
  }
  std::vector<size_t> runs;  // each kind's events come in order
  for (size_t kind = 0; kind < lookup_.events_by_kind.size(); ++kind) {
    if (((selection.kinds >> kind) & 1u) == 0 || lookup_.events_by_kind[kind].empty()) continue;
    ++kinds_visited;
    runs.push_back(out.size());
    for (EventIndex i : lookup_.events_by_kind[kind]) keep(i);
  }
  if (kinds_visited > 1) merge_runs(out, std::move(runs));
  return out;
}

}  // namespace ptadvise::rule_evaluation
