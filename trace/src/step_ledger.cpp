// The step ledger beyond idle time: how busy the GPU was in each step and how much of that busy time could
// come off the step if the GPU work were faster. A faster kernel only shortens a step whose pace the GPU
// sets; where the GPU waits for the host, the host's own work is the floor.
#include <algorithm>

#include "analysis_detail.h"

namespace ptadvise::detail {

namespace {

// A runtime call this long is not launch overhead (a few µs): the host is held up (a full launch queue, an
// implicit synchronisation in the allocator or driver).
constexpr int64_t kHeldUpCallNs = 50'000;

// Intervals of the thread `track` in which the host waits on something the GPU's progress releases:
// blocking calls, runtime/driver calls held up for kHeldUpCallNs or more, and data-loader fetches (a queue
// fed at the rate the loop consumes). Merged.
std::vector<Interval> host_waits(const Timeline& timeline, const NameClasses& names, uint32_t track) {
  std::vector<Interval> waits;
  if (track == kNone || track >= timeline.track_events.size()) return waits;
  const Events& events = timeline.events;
  const std::unordered_set<EventIndex> blocking = blocking_calls(timeline, names);
  for (EventIndex e : timeline.track_events[track]) {
    const EventKind kind = events.kind[e];
    bool waits_here = false;
    if (kind == EventKind::Runtime || kind == EventKind::Driver) {
      waits_here = names.has(timeline, e, kSyncCall) || blocking.count(e) > 0 || events.dur_ns[e] >= kHeldUpCallNs;
    } else if (kind == EventKind::CpuOp || kind == EventKind::UserAnnotation) {
      waits_here = names.has(timeline, e, kDataLoader);
    }
    if (waits_here) waits.push_back({events.ts_ns[e], events.end_ns(e)});
  }
  detail::merge_intervals(waits);
  return waits;
}

}  // namespace

void build_step_ledger(const Timeline& timeline, const NameClasses& names, Analysis& analysis) {
  const std::vector<Step>& steps = analysis.steps;
  analysis.step_ledger.assign(steps.size(), {});
  std::vector<Interval> busy;
  for (const auto& device : analysis.busy) busy.insert(busy.end(), device.begin(), device.end());
  detail::merge_intervals(busy);
  const std::vector<Interval> waits = host_waits(timeline, names, analysis.main_track);
  // A trace without the launching thread's events (GPU-only exports) says nothing about the host: the bound
  // is then the GPU's busy time.
  const bool host_known = analysis.main_track != kNone && analysis.main_track < timeline.track_events.size() &&
                          !timeline.track_events[analysis.main_track].empty();
  for (size_t k = 0; k < steps.size() && k < analysis.step_windows.size(); ++k) {
    StepLedger& ledger = analysis.step_ledger[k];
    const Interval window = analysis.step_windows[k];
    ledger.window_ns = std::max<int64_t>(0, window.end_ns - window.start_ns);
    ledger.busy_ns = detail::covered_ns(busy, window.start_ns, window.end_ns);
    const int64_t host_start = steps[k].start_ns;
    const int64_t host_end = k + 1 < steps.size() ? steps[k + 1].start_ns : steps[k].end_ns;
    ledger.host_period_ns = std::max<int64_t>(0, host_end - host_start);
    // Waiting counts only while the GPU is busy: that is the time a faster GPU would give back to the host.
    auto it = std::lower_bound(waits.begin(), waits.end(), host_start,
                               [](const Interval& wait, int64_t t) { return wait.end_ns <= t; });
    for (; it != waits.end() && it->start_ns < host_end; ++it) {
      ledger.host_wait_ns += detail::covered_ns(busy, std::max(it->start_ns, host_start), std::min(it->end_ns, host_end));
    }
    // The step cannot get shorter than the host's own work in it, nor by more than the GPU's busy time.
    const int64_t host_work = ledger.host_period_ns - ledger.host_wait_ns;
    ledger.gpu_bound_ns =
        host_known ? std::clamp<int64_t>(steps[k].period_ns - host_work, 0, ledger.busy_ns) : ledger.busy_ns;
  }
}

}  // namespace ptadvise::detail
