// The `background` primitive (docs/WHATIF.md): host time moved off the training thread to worker processes
// that run ahead of it. What moves is either the selected events' host time (data loading: one batch per
// event) or only the launching thread's time inside the idle stretches the step ledger charged to the
// finding (host work the GPU waited for: one batch per step).
#include <algorithm>
#include <map>

#include "transform.h"

namespace ptadvise::whatif {
namespace {

// One batch of moved work: the host nodes it came from (in time order) and the time taken from each.
struct Batch {
  std::vector<std::pair<uint32_t, int64_t>> taken;
};

bool movable(const Graph& g, uint32_t n) {
  const Node& node = g.nodes[n];
  if (node.kind == NodeKind::HostWork || node.kind == NodeKind::HostGap) return true;
  // A call that queues no GPU work (an allocation, a query) goes with the work around it; launches and
  // waits stay on the thread that feeds the GPU.
  return node.kind == NodeKind::Call && g.first_launched[n] == kNone;
}

std::vector<Batch> event_batches(const Graph& g, const Fix& fix, Changes& changes) {
  const Events& ev = g.analysis->timeline->events;
  std::vector<EventIndex> ordered = fix.events;
  std::sort(ordered.begin(), ordered.end(), [&ev](EventIndex x, EventIndex y) { return ev.ts_ns[x] < ev.ts_ns[y]; });
  TransformSpec host_only = fix.spec;
  host_only.gpu = false;
  std::vector<Batch> batches;
  for (EventIndex e : ordered) {
    std::vector<uint32_t> host = host_nodes(g, e, host_only);
    if (host.empty()) continue;
    Batch batch;
    for (uint32_t n : host) {
      batch.taken.push_back({n, changes.work[n]});
      changes.work[n] = 0;
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

// Per step, the thread's time inside the finding's charged stretches. A stretch lies on the thread of its
// culprit (the op or frame the thread was running), else on the thread that carries the steps. Stretches
// of several devices over the same host time are merged first, so no host time moves twice.
std::vector<Batch> charged_batches(const Graph& g, const Fix& fix, Changes& changes) {
  const Analysis& a = *g.analysis;
  const Events& ev = a.timeline->events;
  struct Stretch {
    int64_t start, end;
  };
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Stretch>> by_step_lane;  // (step, lane) -> stretches
  for (uint32_t k : fix.idle_gaps) {
    if (k >= a.idle.size()) continue;
    const IdleGap& gap = a.idle[k];
    const uint32_t track = gap.culprit != kNone && gap.culprit < ev.size() ? ev.track[gap.culprit] : a.main_track;
    const uint32_t lane = track < g.lane_of_track.size() ? g.lane_of_track[track] : kNone;
    if (lane == kNone || g.lanes[lane].gpu || gap.end_ns <= gap.start_ns) continue;
    by_step_lane[{gap.step, lane}].push_back({gap.start_ns, gap.end_ns});
  }
  std::vector<std::pair<int64_t, Batch>> timed;
  for (auto& [key, stretches] : by_step_lane) {
    std::sort(stretches.begin(), stretches.end(), [](const Stretch& x, const Stretch& y) { return x.start < y.start; });
    std::vector<Stretch> merged;
    for (const Stretch& s : stretches) {
      if (!merged.empty() && s.start <= merged.back().end) {
        merged.back().end = std::max(merged.back().end, s.end);
      } else {
        merged.push_back(s);
      }
    }
    const Lane& lane = g.lanes[key.second];
    Batch batch;
    for (const Stretch& s : merged) {
      auto it = std::upper_bound(lane.nodes.begin(), lane.nodes.end(), s.start,
                                 [&g](int64_t t, uint32_t n) { return t < g.nodes[n].start_ns; });
      if (it != lane.nodes.begin()) --it;
      for (; it != lane.nodes.end() && g.nodes[*it].start_ns < s.end; ++it) {
        const uint32_t n = *it;
        const Node& node = g.nodes[n];
        const int64_t overlap = std::min(s.end, node.start_ns + node.dur_ns) - std::max(s.start, node.start_ns);
        if (overlap <= 0 || !movable(g, n)) continue;
        const int64_t take = std::min(overlap, changes.work[n]);
        if (take <= 0) continue;
        changes.work[n] -= take;
        batch.taken.push_back({n, take});
      }
    }
    if (batch.taken.empty()) continue;
    const int64_t first = g.nodes[batch.taken.front().first].start_ns;
    timed.push_back({first, std::move(batch)});
  }
  std::stable_sort(timed.begin(), timed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Batch> batches;
  for (auto& [time, batch] : timed) batches.push_back(std::move(batch));
  return batches;
}

}  // namespace

// The workers were started before the replayed window and have `prefetch` batches each ready when it
// opens; after that each batch is made by one worker as soon as that worker is free. The training thread
// waits only when the batch it reaches is not ready: the last node a batch came from ends no earlier
// than the batch. (The workers' lead over the loop is not capped here.)
void background(const Graph& g, const Fix& fix, Changes& changes) {
  const std::vector<Batch> batches = fix.spec.host_time == TransformSpec::HostTime::ChargedIdle
                                         ? charged_batches(g, fix, changes)
                                         : event_batches(g, fix, changes);
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Node& node : g.nodes) origin = std::min(origin, node.start_ns);
  const size_t workers = static_cast<size_t>(std::max(1, fix.spec.workers));
  const size_t ready = workers * static_cast<size_t>(std::max(0, fix.spec.prefetch));
  std::vector<int64_t> free_at(workers, origin);
  for (size_t index = 0; index < batches.size(); ++index) {
    if (index < ready) continue;  // prefetched before the window opened
    int64_t load = 0;
    uint32_t last = batches[index].taken.front().first;
    for (const auto& [n, taken] : batches[index].taken) {
      load += taken;
      if (g.nodes[n].start_ns >= g.nodes[last].start_ns) last = n;
    }
    int64_t& worker = free_at[index % workers];
    worker += load;
    changes.floor.raise(2 * last + 1, worker);
  }
}

}  // namespace ptadvise::whatif
