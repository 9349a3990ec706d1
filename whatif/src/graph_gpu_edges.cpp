// The edges between the host and the GPU: stream order, launches, stream events, host waits and loader
// waits (docs/WHATIF.md, "The graph").
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "graph_builder.h"

namespace ptadvise::whatif::detail {

// Host lanes: program order. GPU lanes: stream order. An op launched while the op before it still ran,
// and an op without a launch call, keeps the gap it had after the op before it: the GPU's own time
// between them (scheduling, other streams), which a faster op before it does not remove.
void Builder::order_edges() {
  for (const Lane& lane : g_.lanes) {
    for (size_t k = 1; k < lane.nodes.size(); ++k) {
      const uint32_t prev = lane.nodes[k - 1], node = lane.nodes[k];
      int64_t delay = 0;
      bool cause_untraced = false;
      if (lane.gpu) {
        const uint32_t call = call_node(ev_.launch[g_.nodes[node].event]);
        if (call == kNone || launched_behind(prev, call)) {
          delay = std::max<int64_t>(0, g_.nodes[node].start_ns - (g_.nodes[prev].start_ns + g_.nodes[prev].dur_ns));
          cause_untraced = call == kNone && delay > 0 && graph_launch_before(g_.nodes[node].start_ns) == kNone;
        }
      }
      add_edge(2 * prev + 1, 2 * node, delay, EdgeKind::Order);
      g_.edges.back().cause_untraced = cause_untraced;
    }
  }
}

// Launch latency: measured when the stream was idle when the call queued the op (nothing but the launch
// held it); when the op was queued behind its stream, the median latency of the device's ops queued on
// an idle stream (the smallest measured latency when there is none), never more than measured: the rest
// of its wait was for its stream (order edge). Measuring from the op's start alone would take a GPU-bound
// stream's queueing for launch latency and tie the GPU to the host.
void Builder::launch_edges() {
  struct Pending {
    uint32_t node, call;
    bool queued;
  };
  std::vector<Pending> pending;
  std::map<int32_t, std::vector<int64_t>> latencies;
  std::map<int32_t, int64_t> smallest;
  std::unordered_map<uint32_t, uint32_t> last_launched;  // per call launching more than one op
  for (const Lane& lane : g_.lanes) {
    if (!lane.gpu) continue;
    const int32_t device = tl_.tracks[lane.track].device;
    uint32_t last_graph_launch = kNone;
    for (size_t k = 0; k < lane.nodes.size(); ++k) {
      const uint32_t n = lane.nodes[k];
      const Node& node = g_.nodes[n];
      const uint32_t call = call_node(ev_.launch[node.event]);
      if (call == kNone) {
        // CUDA-graph kernels and ops queued before profiling: the nearest earlier graph launch starts them.
        uint32_t graph = graph_launch_before(node.start_ns);
        bool first_of_graph = k == 0 || graph != last_graph_launch;
        if (graph != kNone && first_of_graph) {
          add_edge(2 * graph, 2 * n, node.start_ns - g_.nodes[graph].start_ns, EdgeKind::GraphLaunch);
        } else if (k == 0) {
          g_.nodes[n].anchored = true;
        }
        last_graph_launch = graph;
        continue;
      }
      g_.launched_by[n] = call;
      if (g_.first_launched[call] == kNone) {
        g_.first_launched[call] = n;
      } else {
        // The list's last op, remembered for the calls that launch several (a graph launch, a copy split
        // in parts; a trace that gives one correlation id to every launch): not walked to each time.
        auto [tail, added] = last_launched.try_emplace(call, g_.first_launched[call]);
        g_.next_launched[tail->second] = n;
        tail->second = n;
      }
      const bool queued = k > 0 && launched_behind(lane.nodes[k - 1], call);
      const int64_t measured = node.start_ns - g_.nodes[call].start_ns;
      if (!queued) latencies[device].push_back(measured);
      smallest[device] = smallest.count(device) ? std::min(smallest[device], measured) : measured;
      pending.push_back({n, call, queued});
      launch_device_[n] = device;
    }
  }
  std::map<int32_t, int64_t> typical;
  for (const auto& [device, value] : smallest) typical[device] = std::max<int64_t>(0, value);
  for (auto& [device, values] : latencies) {
    if (values.empty()) continue;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
    typical[device] = values[values.size() / 2];
  }
  for (const Pending& p : pending) {
    const int64_t measured = g_.nodes[p.node].start_ns - g_.nodes[p.call].start_ns;
    int64_t delay = measured;
    if (p.queued) {
      auto found = typical.find(launch_device_[p.node]);
      delay = std::min(measured, found != typical.end() ? found->second : 0);
    }
    add_edge(2 * p.call, 2 * p.node, delay, EdgeKind::Launch);
  }
}

uint32_t Builder::graph_launch_before(int64_t time) {
  if (!graph_launches_ready_) {
    graph_launches_ready_ = true;
    for (uint32_t n = 0; n < g_.nodes.size(); ++n) {
      const Node& node = g_.nodes[n];
      if (node.kind == NodeKind::Call && node.event != kNone && names_.is(tl_, node.event, kGraphLaunch)) {
        graph_launches_.push_back(n);
      }
    }
    std::sort(graph_launches_.begin(), graph_launches_.end(),
              [this](uint32_t x, uint32_t y) { return g_.nodes[x].start_ns < g_.nodes[y].start_ns; });
  }
  auto it = std::upper_bound(graph_launches_.begin(), graph_launches_.end(), time,
                             [this](int64_t t, uint32_t n) { return t < g_.nodes[n].start_ns; });
  return it == graph_launches_.begin() ? kNone : *(it - 1);
}

// Per GPU lane: when each op was queued (its launch call's start; running maximum, so it is sorted).
const std::vector<int64_t>& Builder::queued_at(uint32_t lane_index) {
  auto& keys = queued_at_[lane_index];
  if (!keys.empty() || g_.lanes[lane_index].nodes.empty()) return keys;
  int64_t running = std::numeric_limits<int64_t>::min();
  for (uint32_t n : g_.lanes[lane_index].nodes) {
    const uint32_t call = g_.launched_by[n];
    running = std::max(running, call != kNone ? g_.nodes[call].start_ns : g_.nodes[n].start_ns);
    keys.push_back(running);
  }
  return keys;
}

// The last op of the lane queued before `time`, or kNone.
uint32_t Builder::last_queued_before(uint32_t lane_index, int64_t time) {
  const auto& keys = queued_at(lane_index);
  auto it = std::lower_bound(keys.begin(), keys.end(), time);
  if (it == keys.begin()) return kNone;
  return g_.lanes[lane_index].nodes[static_cast<size_t>(it - keys.begin()) - 1];
}

uint32_t Builder::first_queued_from(uint32_t lane_index, int64_t time) {
  const auto& keys = queued_at(lane_index);
  auto it = std::lower_bound(keys.begin(), keys.end(), time);
  if (it == keys.end()) return kNone;
  return g_.lanes[lane_index].nodes[static_cast<size_t>(it - keys.begin())];
}

uint32_t Builder::lane_of_stream(int64_t device, int64_t stream) const {
  auto found = lane_by_stream_.find({static_cast<int32_t>(device), stream});
  return found != lane_by_stream_.end() ? found->second : kNone;
}

EventIndex Builder::call_with_correlation(int64_t correlation) {
  if (!calls_by_correlation_ready_) {
    calls_by_correlation_ready_ = true;
    for (uint32_t n = 0; n < g_.nodes.size(); ++n) {
      const Node& node = g_.nodes[n];
      if (node.kind == NodeKind::Call && ev_.correlation[node.event] >= 0) {
        calls_by_correlation_.emplace(ev_.correlation[node.event], node.event);
      }
    }
  }
  auto found = calls_by_correlation_.find(correlation);
  return found != calls_by_correlation_.end() ? found->second : kNone;
}

// The op a cudaEventRecord captured: the last op queued on the recorded stream before the record call.
uint32_t Builder::recorded_op(EventIndex sync_record, int64_t device) {
  auto record_corr = tl_.arg_int(sync_record, "wait_on_cuda_event_record_corr_id");
  auto stream = tl_.arg_int(sync_record, "wait_on_stream");
  if (!record_corr || !stream || *record_corr < 0 || *stream < 0) return kNone;
  EventIndex record_call = call_with_correlation(*record_corr);
  uint32_t lane = lane_of_stream(device, *stream);
  if (record_call == kNone || lane == kNone) return kNone;
  return last_queued_before(lane, ev_.ts_ns[record_call]);
}

// cudaEventRecord on one stream -> cudaStreamWaitEvent on another (the `Stream Wait Event` records).
void Builder::stream_event_edges() {
  for (EventIndex r = 0; r < ev_.size(); ++r) {
    if (ev_.kind[r] != EventKind::Sync || !in_window(r)) continue;
    auto kind = tl_.arg_string(r, "cuda_sync_kind");
    if (!kind || *kind != "Stream Wait Event") continue;
    const int64_t device = tl_.arg_int(r, "device").value_or(tl_.tracks[ev_.track[r]].device);
    auto stream = tl_.arg_int(r, "stream");
    const EventIndex wait_call = ev_.launch[r];
    if (!stream || wait_call == kNone) continue;
    uint32_t source = recorded_op(r, device);
    uint32_t lane = lane_of_stream(device, *stream);
    if (source == kNone || lane == kNone) continue;
    uint32_t target = first_queued_from(lane, ev_.ts_ns[wait_call]);
    if (target == kNone || g_.nodes[target].lane == g_.nodes[source].lane) continue;
    const Node& s = g_.nodes[source];
    if (s.start_ns + s.dur_ns > g_.nodes[target].start_ns + kToleranceNs) continue;  // did not wait on it
    add_edge(2 * source + 1, 2 * target, 0, EdgeKind::StreamEvent);
  }
}

// Host waits: the GPU work each one drains, and how long it took after that work ended.
void Builder::wait_edges() {
  std::vector<uint32_t> drained;
  for (const Lane& lane : g_.lanes) {
    if (lane.gpu) continue;
    uint32_t last_launched = kNone;  // the thread's last GPU op, for stream syncs without a record
    for (uint32_t n : lane.nodes) {
      Node& node = g_.nodes[n];
      if (node.kind != NodeKind::Call || g_.node_of_event[node.event] != n) continue;
      const EventIndex call = node.event;
      drained.clear();
      const bool named_wait = names_.is(tl_, call, kBlockingCall);
      const EventIndex linked = ev_.launch[call];
      const bool has_record = linked != kNone && ev_.kind[linked] == EventKind::Sync &&
                              !names_.is(tl_, call, kQueryCall);
      if (has_record) {
        records_drain(linked, last_launched, drained);
      } else if (named_wait) {
        if (names_.is(tl_, call, kDeviceWide)) {
          for (uint32_t l = 0; l < g_.lanes.size(); ++l) {
            if (!g_.lanes[l].gpu) continue;
            uint32_t op = last_queued_before(l, node.start_ns);
            if (op != kNone) drained.push_back(op);
          }
        } else if (g_.first_launched[n] != kNone) {
          drained.push_back(g_.first_launched[n]);  // a synchronous copy waits for itself
        } else if (last_launched != kNone) {
          uint32_t op = last_queued_before(g_.nodes[last_launched].lane, node.start_ns);
          if (op != kNone) drained.push_back(op);
        }
      }
      // A launch that returns only after its op ended, on a thread whose launches block
      // (CUDA_LAUNCH_BLOCKING), or a copy from or to pageable memory, which the driver does before it
      // returns. Other launches outlast their op too, each a tiny op started on an idle stream and done
      // before its call returned: taken for waits, they tie the host to the GPU in the replay wherever a
      // fix makes the GPU busier, and a microsecond of clock offset between the host's and the GPU's
      // timestamps decides which launches they are (Analysis::call_waits_for_op).
      // (The op must also end within the call as measured, so that the unchanged replay stays exact.)
      if (drained.empty() && g_.first_launched[n] != kNone && a_.call_waits_for_op(call)) {
        const Node& op = g_.nodes[g_.first_launched[n]];
        if (node.start_ns + node.dur_ns >= op.start_ns + op.dur_ns) drained.push_back(g_.first_launched[n]);
      }
      if (g_.first_launched[n] != kNone) last_launched = g_.first_launched[n];
      if (named_wait || has_record) node.category = Category::Sync;
      int64_t drained_end = std::numeric_limits<int64_t>::min();
      const int64_t call_end = node.start_ns + node.dur_ns;
      std::erase_if(drained, [&](uint32_t op) {
        return g_.nodes[op].start_ns + g_.nodes[op].dur_ns > call_end + kToleranceNs;  // ended after: not waited for
      });
      if (drained.empty()) continue;
      for (uint32_t op : drained) drained_end = std::max(drained_end, g_.nodes[op].start_ns + g_.nodes[op].dur_ns);
      const int64_t tail = std::clamp<int64_t>(call_end - drained_end, 0, node.dur_ns);
      node.kind = NodeKind::HostWait;
      node.category = Category::Sync;
      node.work_ns = drained_end > node.start_ns ? tail : node.dur_ns;
      for (uint32_t op : drained) add_edge(2 * op + 1, 2 * n + 1, tail, EdgeKind::Wait);
      ++g_.inferred_waits;
    }
  }
}

void Builder::records_drain(EventIndex record, uint32_t last_launched, std::vector<uint32_t>& drained) {
  auto kind = tl_.arg_string(record, "cuda_sync_kind");
  const int64_t device = tl_.arg_int(record, "device").value_or(tl_.tracks[ev_.track[record]].device);
  const int64_t start = ev_.ts_ns[ev_.launch[record]];
  if (kind && *kind == "Event Sync") {
    uint32_t op = recorded_op(record, device);
    if (op != kNone) drained.push_back(op);
    return;
  }
  if (kind && *kind == "Stream Sync") {
    auto stream = tl_.arg_int(record, "stream");
    uint32_t lane = stream ? lane_of_stream(device, *stream) : kNone;
    if (lane == kNone && last_launched != kNone) lane = g_.nodes[last_launched].lane;
    uint32_t op = lane != kNone ? last_queued_before(lane, start) : kNone;
    if (op != kNone) drained.push_back(op);
    return;
  }
  // Context / device sync: every stream of the device.
  for (uint32_t l = 0; l < g_.lanes.size(); ++l) {
    if (!g_.lanes[l].gpu || tl_.tracks[g_.lanes[l].track].device != device) continue;
    uint32_t op = last_queued_before(l, start);
    if (op != kNone) drained.push_back(op);
  }
}

// A wait for a loader worker's batch that ends while the GPU still has queued work is the loop's slack:
// the workers hand out batches at the pace the loop takes them, and the loop goes only as fast as the
// GPU, so the wait ends when the GPU's queue is down to what it held then (its end minus the same lead).
// Faster GPU work ends it sooner. A wait that ends with the GPU's queue empty is the workers' own pace and
// keeps its length. (The step ledger's GPU bound counts such a fetch as elastic too, docs/ANALYSIS.md.)
void Builder::worker_wait_edges() {
  for (uint32_t n : worker_waits_) {
    Node& node = g_.nodes[n];
    if (node.dur_ns <= kToleranceNs) continue;
    const int64_t end = node.start_ns + node.dur_ns;
    uint32_t queue_end = kNone;  // the op that ends the furthest-ahead queue at the wait's end
    for (uint32_t l = 0; l < g_.lanes.size(); ++l) {
      if (!g_.lanes[l].gpu) continue;
      const uint32_t last = last_queued_before(l, end);
      if (last == kNone || g_.nodes[last].start_ns + g_.nodes[last].dur_ns <= end) continue;  // drained
      if (queue_end == kNone || g_.nodes[last].start_ns + g_.nodes[last].dur_ns >
                                    g_.nodes[queue_end].start_ns + g_.nodes[queue_end].dur_ns) {
        queue_end = last;
      }
    }
    if (queue_end == kNone) continue;
    const Node& op = g_.nodes[queue_end];
    node.work_ns = 0;
    // A negative delay: the wait ends that long before the queue's last op does.
    add_edge(2 * queue_end + 1, 2 * n + 1, end - (op.start_ns + op.dur_ns), EdgeKind::Wait);
    ++g_.elastic_loader_waits;
  }
}

}  // namespace ptadvise::whatif::detail
