// GPU busy time per device and the step windows the ledger charges idle time in.
#include <algorithm>
#include <limits>

#include "host_pieces.h"

namespace ptadvise::detail {

void merge_intervals(std::vector<Interval>& intervals) {
  // Often in order already (one stream's ops, a thread's calls): checked first, sorted only when not. The
  // union below is the same whatever the order of equal starts.
  auto by_start = [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_start)) std::sort(intervals.begin(), intervals.end(), by_start);
  size_t out = 0;
  for (const Interval& interval : intervals) {
    if (interval.end_ns <= interval.start_ns) continue;
    if (out > 0 && interval.start_ns <= intervals[out - 1].end_ns) {
      intervals[out - 1].end_ns = std::max(intervals[out - 1].end_ns, interval.end_ns);
    } else {
      intervals[out++] = interval;
    }
  }
  intervals.resize(out);
}

int64_t covered_ns(const std::vector<Interval>& merged, int64_t start, int64_t end) {
  int64_t total = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), start,
                             [](const Interval& interval, int64_t value) { return interval.end_ns <= value; });
  for (; it != merged.end() && it->start_ns < end; ++it) {
    total += std::min(it->end_ns, end) - std::max(it->start_ns, start);
  }
  return total;
}

std::vector<DeviceBusy> device_busy(const Timeline& timeline, const std::vector<int32_t>& devices) {
  const Events& events = timeline.events;
  std::vector<std::vector<EventIndex>> ops(devices.size());
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    const Track& track = timeline.tracks[t];
    if (track.kind != TrackKind::Gpu) continue;
    auto it = std::lower_bound(devices.begin(), devices.end(), track.device);
    if (it == devices.end() || *it != track.device) continue;
    auto& list = ops[static_cast<size_t>(it - devices.begin())];
    for (EventIndex i : timeline.track_events[t]) {
      if (is_gpu_activity(events.kind[i]) && events.dur_ns[i] > 0) list.push_back(i);
    }
  }
  std::vector<DeviceBusy> result(devices.size());
  for (size_t d = 0; d < devices.size(); ++d) {
    auto& list = ops[d];
    std::sort(list.begin(), list.end(), [&events](EventIndex a, EventIndex b) {
      return events.ts_ns[a] != events.ts_ns[b] ? events.ts_ns[a] < events.ts_ns[b] : a < b;
    });
    DeviceBusy& out = result[d];
    for (EventIndex i : list) {
      int64_t start = events.ts_ns[i], end = events.end_ns(i);
      if (!out.busy.empty() && start <= out.busy.back().end_ns) {
        if (end > out.busy.back().end_ns) {
          out.busy.back().end_ns = end;
          out.last_op.back() = i;
        }
      } else {
        out.busy.push_back({start, end});
        out.first_op.push_back(i);
        out.last_op.push_back(i);
      }
    }
  }
  return result;
}

std::vector<DeviceBusy> compute_busy(const Timeline& timeline, Analysis& analysis) {
  const Events& events = timeline.events;
  std::vector<uint8_t> seen(timeline.tracks.size(), 0);
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (is_gpu_activity(events.kind[i]) && events.track[i] < seen.size()) seen[events.track[i]] = 1;
  }
  analysis.devices.clear();
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    if (seen[t] && timeline.tracks[t].kind == TrackKind::Gpu) analysis.devices.push_back(timeline.tracks[t].device);
  }
  std::sort(analysis.devices.begin(), analysis.devices.end());
  analysis.devices.erase(std::unique(analysis.devices.begin(), analysis.devices.end()), analysis.devices.end());
  std::vector<DeviceBusy> devices = device_busy(timeline, analysis.devices);
  analysis.busy.clear();
  for (const DeviceBusy& device : devices) analysis.busy.push_back(device.busy);
  return devices;
}

void compute_step_windows(Analysis& analysis) {
  analysis.step_windows.clear();
  // Windows tile time step after step, each from its period start to the next one's (the last for its
  // period), so no window is longer than its step's period and no idle nanosecond is in two steps.
  const std::vector<Step>& steps = analysis.steps;
  int64_t cursor = std::numeric_limits<int64_t>::min();
  for (size_t k = 0; k < steps.size(); ++k) {
    int64_t start = std::max(steps[k].period_start_ns, cursor);
    int64_t end = k + 1 < steps.size() ? steps[k + 1].period_start_ns : steps[k].period_start_ns + steps[k].period_ns;
    end = std::max(end, start);
    analysis.step_windows.push_back({start, end});
    cursor = end;
  }
}

}  // namespace ptadvise::detail
