// Idle time from the step ledger (docs/RULE_LANGUAGE.md "Idle time: the ledger"): the gaps an idle metric
// counts (by cause, stretch length and culprit, per site or for the whole trace), with the refill time after
// a blocking call.
#include <algorithm>

#include "evaluator.h"

namespace ptadvise::rule_evaluation {

const std::vector<std::vector<uint32_t>>& Evaluator::idle_gaps(size_t metric_index) {
  if (idle_ready_[metric_index]) return idle_gaps_[metric_index];
  const Metric& metric = rule_->metrics[metric_index];
  auto& out = idle_gaps_[metric_index];
  const bool per_group = metric.culprits == Metric::Culprits::Site && metric.site_scoped;
  out.assign(per_group ? groups_.size() : 1, {});
  // Host events that stand for a culprit: the selected events, their launch calls and CPU ops, each with
  // the first group that names it. Per event in one array (event_mark_), reset below.
  if (event_mark_.size() != ev_.size()) event_mark_.assign(ev_.size(), kNone);
  std::vector<EventIndex> anchors;
  if (metric.culprits != Metric::Culprits::Any) {
    auto set = [&](EventIndex e, uint32_t group) {
      if (event_mark_[e] != kNone) return;
      event_mark_[e] = group;
      anchors.push_back(e);
    };
    auto add = [&](EventIndex e, uint32_t group) {
      set(e, group);
      EventKind kind = ev_.kind[e];
      if (is_gpu_side(kind) || kind == EventKind::Runtime || kind == EventKind::Driver) {
        if (EventIndex at = anchor(e); at != kNone) set(at, group);
        // Only a real CPU op stands for the culprit: an enclosing annotation would swallow every gap below it.
        if (EventIndex op = a_.cpu_op_of(e); op != kNone && ev_.kind[op] == EventKind::CpuOp) set(op, group);
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
    if (metric.max_stretch_ns >= 0 && lookup_.stretch_ns[k] >= metric.max_stretch_ns) continue;
    if (metric.min_stretch_ns >= 0 && lookup_.stretch_ns[k] < metric.min_stretch_ns) continue;
    if (metric.culprits == Metric::Culprits::Any) {
      out[0].push_back(k);
      continue;
    }
    EventIndex current = gap.culprit;
    for (int depth = 0; current != kNone && current < ev_.size() && depth < kMaxAncestorDepth; ++depth) {
      if (event_mark_[current] != kNone) {
        out[event_mark_[current]].push_back(k);
        break;
      }
      current = parent(current);
    }
  }
  for (EventIndex e : anchors) event_mark_[e] = kNone;
  if (metric.refill) extend_to_refill(metric, out);
  idle_ready_[metric_index] = true;
  return out;
}

// After a blocking call returns, the GPU stays idle until the host has queued new work; the ledger charges
// that refill time to whatever the host does meanwhile (cpu-work, untraced, launch-bound). It is the
// blocking call's cost too, so a matched gap takes the following gaps of its idle stretch up to the host's
// next launch — never across host work that launches nothing (its own cause, host-bound CPU work) or a
// gap with a culprit of its own, and nothing when the host launches nothing before the stretch ends.
void Evaluator::extend_to_refill(const Metric& metric, std::vector<std::vector<uint32_t>>& out) const {
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

const std::vector<uint32_t>& Evaluator::gaps_for(size_t metric_index) {
  const auto& gaps = idle_gaps(metric_index);
  return gaps.size() == 1 ? gaps[0] : gaps[group_];
}

}  // namespace ptadvise::rule_evaluation
