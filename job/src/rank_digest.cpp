// make_digest(): one analysed rank reduced to what the job analysis needs — its collectives with their
// sizes and what preceded them, and per-step compute, communication, exposed communication and waits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "collective_metadata.h"
#include "intervals.h"
#include "ptadvise/job.h"

namespace ptadvise {

namespace {

using job_detail::CollectiveMetadata;
using job_detail::covered;
using job_detail::merge;
using job_detail::message_bytes;
using job_detail::read_metadata;
using job_detail::uncovered;

bool is_ddp_forward(std::string_view name) { return name == "DistributedDataParallel.forward"; }

bool is_data_loader(std::string_view name) {
  return name.starts_with("enumerate(DataLoader)#") && name.find("__next__") != std::string_view::npos;
}

struct Builder {
  const Analysis& analysis;
  const Timeline& timeline;
  const Events& events;
  RankDigest& digest;
  std::vector<uint32_t> steady;          // steady step indices
  std::vector<Interval> windows;         // their windows, sorted
  std::vector<int64_t> window_step;      // step number per window

  std::vector<std::optional<CollectiveType>> kernel_comm, host_comm;  // per StringId
  std::vector<EventIndex> collective_events;
  std::vector<int64_t> issued;  // per collective event: when the rank issued it (its step and order follow this)
  std::vector<Interval> comm, compute, copies, loader, host;

  int64_t absolute(int64_t ts) const { return timeline.origin_ns + ts; }

  // Index of the steady window holding `ts`, or -1.
  int window_of(int64_t ts) const {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                               [](int64_t value, const Interval& w) { return value < w.start_ns; });
    if (it == windows.begin()) return -1;
    --it;
    return ts < it->end_ns ? static_cast<int>(it - windows.begin()) : -1;
  }

  void collect_steps() {
    for (uint32_t s = 0; s < analysis.steps.size(); ++s) {
      if (!analysis.is_steady(s) || s >= analysis.step_windows.size()) continue;
      steady.push_back(s);
    }
    std::sort(steady.begin(), steady.end(), [&](uint32_t a, uint32_t b) {
      return analysis.step_windows[a].start_ns < analysis.step_windows[b].start_ns;
    });
    for (uint32_t s : steady) {
      windows.push_back(analysis.step_windows[s]);
      window_step.push_back(analysis.steps[s].number);
    }
    digest.steady_steps = steady.size();
  }

  void classify_names() {
    kernel_comm.resize(timeline.strings.size());
    host_comm.resize(timeline.strings.size());
    for (StringId id = 0; id < timeline.strings.size(); ++id) {
      kernel_comm[id] = communication_kernel(timeline.strings.view(id));
      host_comm[id] = communication_host_op(timeline.strings.view(id));
    }
  }

  bool is_host_comm(EventIndex i) const {
    return !is_gpu_side(events.kind[i]) && events.kind[i] != EventKind::Runtime && host_comm[events.name[i]].has_value();
  }

  // The collectives of this rank: communication kernels when the trace has any, else the backend's host
  // records (gloo:all_reduce on gloo's threads), else the c10d ops that issued them.
  void select_collectives() {
    std::vector<EventIndex> kernels, backend, c10d;
    for (EventIndex i = 0; i < events.size(); ++i) {
      if (events.kind[i] == EventKind::Kernel) {
        if (kernel_comm[events.name[i]]) kernels.push_back(i);
        continue;
      }
      if (!is_host_comm(i)) continue;
      std::string_view name = timeline.name(i);
      if (name.starts_with("c10d::")) {
        c10d.push_back(i);
      } else if (name != "record_param_comms" && events.kind[i] == EventKind::CpuOp) {
        backend.push_back(i);  // gloo:all_reduce is a CPU op; nccl:all_reduce is an annotation around a launch
      }
    }
    digest.has_gpu = !analysis.devices.empty();
    auto by_start = [&](EventIndex a, EventIndex b) { return events.ts_ns[a] < events.ts_ns[b]; };
    std::sort(c10d.begin(), c10d.end(), by_start);
    if (!kernels.empty()) {
      collective_events = std::move(kernels);
    } else if (!backend.empty()) {
      collective_events = std::move(backend);
    } else {
      collective_events = std::move(c10d);
      c10d.clear();
    }
    std::sort(collective_events.begin(), collective_events.end(), by_start);
    // A collective belongs to the step that issued it: a kernel to its launch, a backend record (gloo's
    // worker thread) to the c10d call that queued it — the k-th c10d call of its type queued the k-th record.
    std::map<CollectiveType, std::vector<int64_t>> queued;
    for (EventIndex c : c10d) queued[host_comm[events.name[c]].value_or(CollectiveType::Other)].push_back(events.ts_ns[c]);
    std::map<CollectiveType, size_t> taken;
    for (EventIndex i : collective_events) {
      int64_t when = events.ts_ns[i];
      if (events.kind[i] == EventKind::Kernel) {
        if (events.launch[i] != kNone) when = std::min(when, events.ts_ns[events.launch[i]]);
      } else if (!timeline.name(i).starts_with("c10d::")) {
        const auto type = host_comm[events.name[i]].value_or(CollectiveType::Other);
        auto it = queued.find(type);
        const size_t k = taken[type]++;
        if (it != queued.end() && k < it->second.size() && it->second[k] <= when) when = it->second[k];
      }
      issued.push_back(when);
    }
    std::vector<size_t> order(collective_events.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return issued[a] < issued[b]; });
    std::vector<EventIndex> sorted_events;
    std::vector<int64_t> sorted_issued;
    for (size_t k : order) {
      sorted_events.push_back(collective_events[k]);
      sorted_issued.push_back(issued[k]);
    }
    collective_events = std::move(sorted_events);
    issued = std::move(sorted_issued);
  }

  CollectiveMetadata metadata_of(EventIndex i) const {
    CollectiveMetadata meta;
    if (events.kind[i] == EventKind::Kernel) {
      auto type = kernel_comm[events.name[i]];
      if (type && *type != CollectiveType::Other) meta.type = type;
      read_metadata(timeline, i, meta);
    } else {
      meta.type = host_comm[events.name[i]];
      read_metadata(timeline, i, meta);
    }
    // The host records around it: record_param_comms, nccl:all_reduce, c10d::allreduce_.
    EventIndex record = events.kind[i] == EventKind::Kernel ? analysis.cpu_op_of(i) : events.parent[i];
    if (events.kind[i] == EventKind::Kernel && events.launch[i] != kNone) record = events.launch[i];
    for (int depth = 0; record != kNone && depth < 8; ++depth, record = events.parent[record]) {
      if (!host_comm[events.name[record]]) continue;
      // The host record names the collective; the kernel only its implementation (NCCL runs all-to-all, and in
      // some builds all-reduce, as SendRecv kernels; ncclDevKernel_Generic runs them all).
      auto type = host_comm[events.name[record]];
      if (type && *type != CollectiveType::Other) meta.type = type;
      read_metadata(timeline, record, meta);
    }
    return meta;
  }

  // Whether the op's enclosing op or annotation is a step marker: an outermost op of the step. Python frames
  // between them (with_stack writes the script's frames around every op) are looked through.
  bool directly_under_step_marker(EventIndex i) const {
    EventIndex above = enclosing_op_or_annotation(events, i);
    return above != kNone && timeline.name(above).starts_with("ProfilerStep#");
  }

  void build_intervals() {
    const bool device = !analysis.devices.empty();
    std::vector<uint8_t> collective_track(timeline.tracks.size(), 0);
    for (EventIndex i : collective_events) collective_track[events.track[i]] = 1;
    for (EventIndex i = 0; i < events.size(); ++i) {
      const EventKind kind = events.kind[i];
      const Interval interval{events.ts_ns[i], events.end_ns(i)};
      if (kind == EventKind::Kernel) {
        if (!kernel_comm[events.name[i]]) compute.push_back(interval);
      } else if (kind == EventKind::Memcpy || kind == EventKind::Memset) {
        copies.push_back(interval);
      } else if (kind == EventKind::CpuOp || kind == EventKind::UserAnnotation) {
        std::string_view name = timeline.name(i);
        if (is_data_loader(name)) {
          loader.push_back(interval);
          continue;
        }
        if (kind != EventKind::CpuOp || name.starts_with("ProfilerStep#")) continue;
        if (events.track[i] == analysis.main_track && directly_under_step_marker(i)) host.push_back(interval);
        // Host-only traces: the CPU ops outside communication are the compute (outermost aten ops).
        if (!device && !collective_track[events.track[i]] && name.starts_with("aten::") && !host_comm[events.name[i]]) {
          bool outermost = true;
          for (EventIndex p = events.parent[i]; p != kNone; p = events.parent[p]) {
            std::string_view parent = timeline.name(p);
            if (parent.starts_with("aten::") || host_comm[events.name[p]]) {
              outermost = false;
              break;
            }
          }
          if (outermost) compute.push_back(interval);
        }
      }
    }
    for (EventIndex i : collective_events) comm.push_back({events.ts_ns[i], events.end_ns(i)});
    merge(comm);
    merge(compute);
    merge(copies);
    merge(loader);
    merge(host);
  }

  void per_step_figures() {
    const double steps = static_cast<double>(std::max<size_t>(steady.size(), 1));
    const double devices = static_cast<double>(std::max<size_t>(analysis.devices.size(), 1));
    int64_t comm_ns = 0, exposed_ns = 0, compute_ns = 0, loader_ns = 0, period_ns = 0;
    for (size_t w = 0; w < windows.size(); ++w) {
      const Interval& window = windows[w];
      comm_ns += covered(comm, window.start_ns, window.end_ns);
      exposed_ns += uncovered(comm, compute, window.start_ns, window.end_ns);
      compute_ns += covered(compute, window.start_ns, window.end_ns);
      loader_ns += covered(loader, window.start_ns, window.end_ns);
      period_ns += analysis.steps[steady[w]].period_ns;
    }
    digest.step_ms = steady.empty() ? 0 : static_cast<double>(period_ns) / steps / kNsPerMs;
    // Several devices in one trace: their union counts once per device, so divide by the devices.
    digest.communication_ms = static_cast<double>(comm_ns) / steps / kNsPerMs;
    digest.exposed_comm_ms = static_cast<double>(exposed_ns) / steps / kNsPerMs;
    digest.compute_ms = static_cast<double>(compute_ns) / steps / kNsPerMs;
    digest.overlap_pct = comm_ns > 0 ? 100.0 * static_cast<double>(comm_ns - exposed_ns) / static_cast<double>(comm_ns) : 0;
    if (!analysis.devices.empty()) {
      int64_t idle = 0;
      for (const IdleGap& gap : analysis.idle) {
        if (gap.step == kNone || !analysis.is_steady(gap.step)) continue;
        idle += gap.duration_ns();
      }
      int64_t loader_idle = 0;
      for (const IdleGap& gap : analysis.idle) {
        if (gap.step != kNone && analysis.is_steady(gap.step) && gap.cause == IdleCause::DataLoader) {
          loader_idle += gap.duration_ns();
        }
      }
      digest.idle_ms = static_cast<double>(idle) / steps / devices / kNsPerMs;
      digest.data_loader_ms = static_cast<double>(loader_idle) / steps / devices / kNsPerMs;
    } else {
      digest.data_loader_ms = static_cast<double>(loader_ns) / steps / kNsPerMs;
    }
  }

  void collectives() {
    std::map<std::pair<int64_t, std::string>, uint32_t> next_order;
    int64_t previous_end = std::numeric_limits<int64_t>::min();
    std::map<CollectiveType, CollectiveTypeStats> stats;
    std::map<CollectiveType, std::pair<int64_t, int64_t>> sized;  // bytes, ns of collectives with a size
    std::vector<size_t> per_window(windows.size(), 0);
    for (size_t k = 0; k < collective_events.size(); ++k) {
      const EventIndex i = collective_events[k];
      const int w = window_of(issued[k]);
      if (w < 0) continue;
      CollectiveMetadata meta = metadata_of(i);
      CollectiveCall call;
      call.type = meta.type.value_or(CollectiveType::Other);
      call.group = meta.group;
      call.seq = meta.seq;
      call.step = window_step[static_cast<size_t>(w)];
      call.order = next_order[{call.step, call.group + '\x1f' + std::string(to_string(call.type))}]++;
      call.start_ns = absolute(events.ts_ns[i]);
      call.end_ns = absolute(events.end_ns(i));
      call.group_size = meta.group_size;
      int64_t bytes = std::max(meta.in_bytes, meta.out_bytes);
      if (call.type == CollectiveType::AllGather && meta.out_bytes == 0 && meta.group_size > 1) {
        // Only the shard is known: the gathered size is n shards.
        bytes = message_bytes(meta.in_bytes, meta.group_size);
      }
      call.bytes = bytes;
      call.on_device = events.kind[i] == EventKind::Kernel;
      call.event = i;
      const int64_t from = std::max(previous_end, windows[static_cast<size_t>(w)].start_ns);
      const int64_t to = std::max(issued[k], events.ts_ns[i]);
      if (to > from) {
        call.before_ns = to - from;
        call.before_compute_ns = covered(compute, from, to);
        call.before_data_loader_ns = covered(loader, from, to);
        call.before_copy_ns = covered(copies, from, to);
        call.before_host_ns = covered(host, from, to);
      }
      previous_end = std::max(previous_end, events.end_ns(i));
      CollectiveTypeStats& s = stats[call.type];
      s.type = call.type;
      s.count_per_step += 1;
      s.ms_per_step += static_cast<double>(events.dur_ns[i]) / kNsPerMs;
      s.group_size = std::max(s.group_size, call.group_size);
      if (call.bytes > 0 && events.dur_ns[i] > 0) {
        s.bytes_per_step += static_cast<double>(call.bytes);
        sized[call.type].first += call.bytes;
        sized[call.type].second += events.dur_ns[i];
      }
      per_window[static_cast<size_t>(w)] += 1;
      digest.collectives.push_back(std::move(call));
    }
    // The window's last step with fewer collectives than each of the others: torch.profiler stops right
    // after the last step, before a collective's record on a helper thread (gloo's) is kept; recorded
    // twice (2 and 4 gloo ranks), every rank lost it on some runs. Who waited in that step is unknown.
    if (per_window.size() >= 3) {
      const size_t fewest_before = *std::min_element(per_window.begin(), per_window.end() - 1);
      if (per_window.back() < fewest_before) digest.collectives_cut_step = window_step.back();
    }
    const double steps = static_cast<double>(std::max<size_t>(steady.size(), 1));
    for (auto& [type, s] : stats) {
      s.count_per_step /= steps;
      s.ms_per_step /= steps;
      s.bytes_per_step /= steps;
      auto it = sized.find(type);
      if (it != sized.end() && it->second.second > 0) {
        s.algbw_gbps = static_cast<double>(it->second.first) / static_cast<double>(it->second.second);  // B/ns = GB/s
        int ranks = s.group_size > 0 ? s.group_size : digest.world_size;
        s.busbw_gbps = s.algbw_gbps * bus_bandwidth_factor(type, ranks);
      }
      digest.by_type.push_back(s);
    }
    std::sort(digest.by_type.begin(), digest.by_type.end(),
              [](const CollectiveTypeStats& a, const CollectiveTypeStats& b) { return a.ms_per_step > b.ms_per_step; });
  }

  // DDP patterns: forwards per step, how many of them are followed by gradient all-reduces before the next
  // one (every micro-step reduces: no no_sync), buffer broadcasts inside the forward (broadcast_buffers).
  void ddp_patterns() {
    std::vector<Interval> forwards;
    std::vector<int64_t> reduces, broadcasts;
    for (EventIndex i = 0; i < events.size(); ++i) {
      if (is_gpu_side(events.kind[i])) continue;
      std::string_view name = timeline.name(i);
      if (is_ddp_forward(name)) {
        forwards.push_back({events.ts_ns[i], events.end_ns(i)});
        continue;
      }
      if (!is_host_comm(i) || !name.starts_with("c10d::")) continue;
      const auto type = host_comm[events.name[i]];
      if (type == CollectiveType::AllReduce) reduces.push_back(events.ts_ns[i]);
      if (type == CollectiveType::Broadcast) {
        for (EventIndex p = events.parent[i]; p != kNone; p = events.parent[p]) {
          if (is_ddp_forward(timeline.name(p))) {
            broadcasts.push_back(events.ts_ns[i]);
            break;
          }
        }
      }
    }
    std::sort(forwards.begin(), forwards.end(), [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
    std::sort(reduces.begin(), reduces.end());
    size_t forward_count = 0, rounds = 0, broadcast_count = 0;
    for (size_t f = 0; f < forwards.size(); ++f) {
      const int w = window_of(forwards[f].start_ns);
      if (w < 0) continue;
      ++forward_count;
      const int64_t until = f + 1 < forwards.size() ? forwards[f + 1].start_ns : windows[static_cast<size_t>(w)].end_ns;
      auto it = std::lower_bound(reduces.begin(), reduces.end(), forwards[f].end_ns);
      if (it != reduces.end() && *it < until) ++rounds;
    }
    for (int64_t ts : broadcasts) {
      if (window_of(ts) >= 0) ++broadcast_count;
    }
    const double steps = static_cast<double>(std::max<size_t>(steady.size(), 1));
    digest.forwards_per_step = static_cast<double>(forward_count) / steps;
    digest.reduce_rounds_per_step = static_cast<double>(rounds) / steps;
    digest.buffer_broadcasts_per_step = static_cast<double>(broadcast_count) / steps;
  }
};

}  // namespace

RankDigest make_digest(const Analysis& analysis, std::vector<Finding> findings) {
  const Timeline& timeline = *analysis.timeline;
  RankDigest digest;
  digest.path = timeline.path;
  digest.rank = timeline.rank;
  digest.rank_from_trace = timeline.rank_from_trace;
  digest.world_size = timeline.world_size;
  digest.backend = timeline.backend;
  for (int32_t id : analysis.devices) {
    const DeviceInfo* device = timeline.device(id);
    if (device && !device->name.empty()) {
      digest.device = device->name;
      break;
    }
  }
  digest.step_count = analysis.steps.size();
  digest.step_note = analysis.step_note;
  digest.warnings = timeline.stats.warnings;
  digest.findings = std::move(findings);
  Builder builder{analysis, timeline, timeline.events, digest, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  builder.collect_steps();
  builder.classify_names();
  builder.select_collectives();
  builder.build_intervals();
  builder.per_step_figures();
  builder.collectives();
  builder.ddp_patterns();
  return digest;
}

}  // namespace ptadvise
