// Metric values per step (counts, times, bytes, built-ins, idle time, arithmetic), cached per trace or per
// group, and the conditions (`when:`) that compare them (docs/RULE_LANGUAGE.md "Metrics", "Conditions").
#include <algorithm>
#include <cmath>
#include <limits>

#include "evaluator.h"

namespace ptadvise::rule_evaluation {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double Evaluator::builtin(const std::string& name) const {
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

double Evaluator::gpu_busy_pct() const {
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

// The time the events cover on their tracks: events nested in or overlapping others of the same selection on
// the same thread or stream (an op that calls itself, an annotation inside another) count once; tracks add
// up (two streams busy at once are twice the GPU time).
int64_t Evaluator::covered_ns(const std::vector<EventIndex>& events) const {
  // Usually each track's events come in time order without overlap: a plain sum, checked as it goes.
  std::vector<int64_t> last_end(tl_.tracks.size(), std::numeric_limits<int64_t>::min());
  int64_t total = 0;
  bool disjoint = true;
  for (EventIndex e : events) {
    const uint32_t track = ev_.track[e];
    if (track >= last_end.size() || ev_.ts_ns[e] < last_end[track]) {
      disjoint = false;
      break;
    }
    last_end[track] = ev_.end_ns(e);
    total += ev_.dur_ns[e];
  }
  if (disjoint) return total;
  // Else the union of each track's intervals. Events in time order (a group's are) merge per track as they
  // come; others are put in order of track and start first.
  const int64_t kNoEnd = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> open_start(last_end.size(), 0), open_end(last_end.size(), kNoEnd);
  const bool in_time_order = std::is_sorted(events.begin(), events.end(), [this](EventIndex a, EventIndex b) {
    return ev_.ts_ns[a] < ev_.ts_ns[b];
  }) && std::all_of(events.begin(), events.end(), [&](EventIndex e) { return ev_.track[e] < open_end.size(); });
  if (in_time_order) {
    total = 0;
    for (EventIndex e : events) {
      const uint32_t t = ev_.track[e];
      if (ev_.ts_ns[e] > open_end[t]) {
        if (open_end[t] > open_start[t]) total += open_end[t] - open_start[t];
        open_start[t] = ev_.ts_ns[e];
        open_end[t] = ev_.end_ns(e);
      } else {
        open_end[t] = std::max(open_end[t], ev_.end_ns(e));
      }
    }
    for (size_t t = 0; t < open_end.size(); ++t) {
      if (open_end[t] > open_start[t]) total += open_end[t] - open_start[t];
    }
    return total;
  }
  std::vector<EventIndex> order = events;
  std::sort(order.begin(), order.end(), [this](EventIndex a, EventIndex b) {
    if (ev_.track[a] != ev_.track[b]) return ev_.track[a] < ev_.track[b];
    return ev_.ts_ns[a] < ev_.ts_ns[b];
  });
  total = 0;
  uint32_t track = 0;
  int64_t start = 0, end = std::numeric_limits<int64_t>::min();
  for (EventIndex e : order) {
    if (ev_.track[e] != track || ev_.ts_ns[e] > end) {
      if (end > start) total += end - start;
      track = ev_.track[e];
      start = ev_.ts_ns[e];
      end = ev_.end_ns(e);
    } else {
      end = std::max(end, ev_.end_ns(e));
    }
  }
  if (end > start) total += end - start;
  return total;
}

double Evaluator::compute(size_t metric_index) {
  const Metric& metric = rule_->metrics[metric_index];
  // A selection of the warm-up steps' events (`in_warmup`) is measured per warm-up step: over the steady
  // steps, 3 warm-up steps beside 2 steady ones were "in 150% of steps".
  const bool warmup_events = metric.kind <= MetricKind::MaxArg && rule_->selections[metric.selection].in_warmup;
  const size_t step_count = warmup_events ? std::max<size_t>(1, a_.warmup_step_count()) : steps_;
  const double steps = static_cast<double>(step_count);
  switch (metric.kind) {
    case MetricKind::Count: return static_cast<double>(events_of(metric).size()) / steps;
    case MetricKind::Time:
    case MetricKind::ShareOfStep: {
      double ms = static_cast<double>(covered_ns(events_of(metric))) / steps / 1e6;
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
      // Over the steps the selection draws from: the steady steps (warm-up and a cut-short last step are
      // never selected), or the warm-up steps for an `in_warmup` selection.
      return a_.steps.empty() ? 0.0 : static_cast<double>(count) / steps * 100.0;
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

bool Evaluator::depends_on_group(size_t metric_index) const {
  const Metric& metric = rule_->metrics[metric_index];
  if (metric.site_scoped) return true;
  for (size_t operand : metric.operands) {
    if (depends_on_group(operand)) return true;
  }
  return false;
}

double Evaluator::value(size_t metric_index) {
  if (group_values_[metric_index]) return *group_values_[metric_index];
  if (trace_values_[metric_index]) return *trace_values_[metric_index];
  double result = compute(metric_index);
  if (depends_on_group(metric_index)) group_values_[metric_index] = result;
  else trace_values_[metric_index] = result;
  return result;
}

bool Evaluator::holds(const Condition& condition) {
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

}  // namespace ptadvise::rule_evaluation
