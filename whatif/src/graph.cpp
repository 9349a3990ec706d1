// The dependency graph of the steps: host threads cut into segments in program order (gaps are nodes of
// their own), GPU ops per stream, and the edges the trace shows between them (docs/WHATIF.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "names.h"
#include "ptadvise/whatif.h"

namespace ptadvise::whatif {
namespace {

constexpr int64_t kToleranceNs = 1000;  // host and GPU timestamps are rounded to µs separately

bool is_host_kind(EventKind kind) {
  switch (kind) {
    case EventKind::CpuOp: case EventKind::UserAnnotation: case EventKind::PythonFunction:
    case EventKind::Runtime: case EventKind::Driver: case EventKind::Collective:
      return true;
    default:
      return false;
  }
}

bool is_call(EventKind kind) { return kind == EventKind::Runtime || kind == EventKind::Driver; }

class Builder {
 public:
  Builder(const Analysis& analysis, const StepWindow& window, Graph& graph)
      : a_(analysis), tl_(*analysis.timeline), ev_(tl_.events), g_(graph), names_(tl_.strings), window_(window) {}

  void build() {
    g_.analysis = &a_;
    g_.window = window_;
    g_.nodes.reserve(ev_.size() + ev_.size() / 2);
    g_.edges.reserve(2 * ev_.size());
    g_.node_of_event.assign(ev_.size(), kNone);
    g_.lane_of_track.assign(tl_.tracks.size(), kNone);
    host_lanes({});
    // The main thread waits for every helper burst one of its pieces spans: cut it at the bursts' edges
    // (docs/WHATIF.md, "join") and cut the threads again (the helpers' pieces stay as they were).
    read_helpers();
    std::vector<int64_t> cuts;
    for (const Burst& b : bursts_) {
      cuts.push_back(b.start);
      cuts.push_back(b.end);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (!cuts.empty()) {
      g_.nodes.clear();
      g_.lanes.clear();
      g_.node_of_event.assign(ev_.size(), kNone);
      g_.lane_of_track.assign(tl_.tracks.size(), kNone);
      g_.main_lane = kNone;
      worker_waits_.clear();
      host_lanes(cuts);
    }
    for (uint32_t t = 0; t < tl_.tracks.size(); ++t) {
      if (tl_.tracks[t].kind == TrackKind::Gpu) gpu_lane(t);
    }
    g_.launched_by.assign(g_.nodes.size(), kNone);
    g_.first_launched.assign(g_.nodes.size(), kNone);
    g_.next_launched.assign(g_.nodes.size(), kNone);
    order_edges();
    launch_edges();
    stream_event_edges();
    wait_edges();
    thread_edges();
    worker_wait_edges();
    index_edges();
  }

 private:
  bool in_window(EventIndex i) const { return a_.event_step[i] != kNone && window_.holds(a_.event_step[i]); }

  uint32_t add_node(const Node& node) {
    g_.nodes.push_back(node);
    return static_cast<uint32_t>(g_.nodes.size() - 1);
  }

  void add_edge(uint32_t from_vertex, uint32_t to_vertex, int64_t delay, EdgeKind kind) {
    g_.edges.push_back({from_vertex, to_vertex, delay, kind});
  }

  void host_lanes(const std::vector<int64_t>& main_cuts) {
    static const std::vector<int64_t> none;
    for (uint32_t t = 0; t < tl_.tracks.size(); ++t) {
      if (tl_.tracks[t].kind == TrackKind::Cpu) host_lane(t, t == a_.main_track ? main_cuts : none);
    }
    if (a_.main_track < g_.lane_of_track.size()) g_.main_lane = g_.lane_of_track[a_.main_track];
  }

  // Cuts a thread's events into segments, each owned by the innermost event running in it, and at `cuts`
  // (sorted times).
  void host_lane(uint32_t track, const std::vector<int64_t>& cuts) {
    Lane lane;
    lane.track = track;
    const uint32_t lane_index = static_cast<uint32_t>(g_.lanes.size());
    struct Open {
      EventIndex event;
      int64_t end;
    };
    std::vector<Open> stack;
    int loader_depth = 0, worker_loader_depth = 0;
    int64_t cursor = std::numeric_limits<int64_t>::min();
    uint32_t last_step = kNone;
    auto emit_piece = [&](int64_t from, int64_t to) {
      Node node;
      node.start_ns = from;
      node.dur_ns = to - from;
      node.work_ns = node.dur_ns;
      node.lane = lane_index;
      node.event = stack.empty() ? kNone : stack.back().event;
      if (node.event != kNone && names_.is(tl_, node.event, kStepMarker)) node.event = kNone;
      node.step = node.event != kNone ? a_.event_step[node.event] : last_step;
      if (node.step != kNone) last_step = node.step;
      if (node.event == kNone) {
        node.kind = NodeKind::HostGap;
      } else if (is_call(ev_.kind[node.event])) {
        node.kind = NodeKind::Call;
      } else {
        node.kind = NodeKind::HostWork;
      }
      node.category = loader_depth > 0 ? Category::DataLoader : Category::Host;
      uint32_t n = add_node(node);
      lane.nodes.push_back(n);
      // Inside a multi-process loader's __next__ and in no op or call: the thread waits for a worker's batch.
      if (worker_loader_depth > 0 && node.kind != NodeKind::Call &&
          (node.event == kNone || ev_.kind[node.event] != EventKind::CpuOp)) {
        worker_waits_.push_back(n);
      }
      if (node.event != kNone && g_.node_of_event[node.event] == kNone) g_.node_of_event[node.event] = n;
    };
    auto emit = [&](int64_t from, int64_t to, bool force) {
      if (to < from || (to == from && !force)) return;
      for (auto it = std::upper_bound(cuts.begin(), cuts.end(), from); it != cuts.end() && *it < to; ++it) {
        emit_piece(from, *it);
        from = *it;
      }
      emit_piece(from, to);
    };
    auto pop = [&]() {
      const Open top = stack.back();
      emit(cursor, top.end, is_call(ev_.kind[top.event]) && g_.node_of_event[top.event] == kNone);
      cursor = std::max(cursor, top.end);
      if (names_.is(tl_, top.event, kDataLoader)) --loader_depth;
      if (names_.is(tl_, top.event, kWorkerLoader)) --worker_loader_depth;
      stack.pop_back();
    };
    for (EventIndex i : tl_.track_events[track]) {
      if (!is_host_kind(ev_.kind[i]) || !in_window(i)) continue;
      const int64_t start = ev_.ts_ns[i];
      while (!stack.empty() && stack.back().end <= start) pop();
      if (cursor == std::numeric_limits<int64_t>::min()) {
        cursor = start;
      } else if (start > cursor) {
        emit(cursor, start, false);
        cursor = start;
      }
      int64_t end = ev_.end_ns(i);
      if (!stack.empty()) end = std::min(end, stack.back().end);  // a child never outlives its parent
      stack.push_back({i, std::max(end, start)});
      if (names_.is(tl_, i, kDataLoader)) ++loader_depth;
      if (names_.is(tl_, i, kWorkerLoader)) ++worker_loader_depth;
    }
    while (!stack.empty()) pop();
    if (lane.nodes.empty()) return;
    g_.nodes[lane.nodes.front()].anchored = true;
    g_.lane_of_track[track] = lane_index;
    g_.lanes.push_back(std::move(lane));
  }

  void gpu_lane(uint32_t track) {
    Lane lane;
    lane.track = track;
    lane.gpu = true;
    const uint32_t lane_index = static_cast<uint32_t>(g_.lanes.size());
    for (EventIndex i : tl_.track_events[track]) {
      if (!is_gpu_activity(ev_.kind[i]) || !in_window(i)) continue;
      Node node;
      node.start_ns = ev_.ts_ns[i];
      node.dur_ns = ev_.dur_ns[i];
      node.work_ns = node.dur_ns;
      node.event = i;
      node.lane = lane_index;
      node.step = a_.event_step[i];
      node.kind = NodeKind::GpuOp;
      node.category = ev_.kind[i] != EventKind::Kernel ? Category::Copy
                      : names_.is(tl_, i, kCommunication)   ? Category::Communication
                                                        : Category::Compute;
      uint32_t n = add_node(node);
      lane.nodes.push_back(n);
      g_.node_of_event[i] = n;
    }
    if (lane.nodes.empty()) return;
    g_.lane_of_track[track] = lane_index;
    const Track& t = tl_.tracks[track];
    lane_by_stream_[{t.device, t.stream}] = lane_index;
    g_.lanes.push_back(std::move(lane));
  }

  uint32_t call_node(EventIndex call) const {
    if (call == kNone || call >= g_.node_of_event.size()) return kNone;
    uint32_t n = g_.node_of_event[call];
    return n != kNone && g_.nodes[n].kind != NodeKind::GpuOp ? n : kNone;
  }

  // Whether `prev`, the op before another on its stream, was still running when `call` queued that op (which then
  // waited for its stream, not for its launch).
  bool launched_behind(uint32_t prev, uint32_t call) const {
    return g_.nodes[prev].start_ns + g_.nodes[prev].dur_ns > g_.nodes[call].start_ns + kToleranceNs;
  }

  // Host lanes: program order. GPU lanes: stream order. An op launched while the op before it still ran,
  // and an op without a launch call, keeps the gap it had after the op before it: the GPU's own time
  // between them (scheduling, other streams), which a faster op before it does not remove.
  void order_edges() {
    for (const Lane& lane : g_.lanes) {
      for (size_t k = 1; k < lane.nodes.size(); ++k) {
        const uint32_t prev = lane.nodes[k - 1], node = lane.nodes[k];
        int64_t delay = 0;
        if (lane.gpu) {
          const uint32_t call = call_node(ev_.launch[g_.nodes[node].event]);
          if (call == kNone || launched_behind(prev, call)) {
            delay = std::max<int64_t>(0, g_.nodes[node].start_ns - (g_.nodes[prev].start_ns + g_.nodes[prev].dur_ns));
          }
        }
        add_edge(2 * prev + 1, 2 * node, delay, EdgeKind::Order);
      }
    }
  }

  // Launch latency: measured when the stream was idle when the call queued the op (nothing but the launch
  // held it); when the op was queued behind its stream, the median latency of the device's ops queued on
  // an idle stream (the smallest measured latency when there is none), never more than measured: the rest
  // of its wait was for its stream (order edge). Measuring from the op's start alone would take a GPU-bound
  // stream's queueing for launch latency and tie the GPU to the host.
  void launch_edges() {
    struct Pending {
      uint32_t node, call;
      bool queued;
    };
    std::vector<Pending> pending;
    std::map<int32_t, std::vector<int64_t>> latencies;
    std::map<int32_t, int64_t> smallest;
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
          uint32_t tail = g_.first_launched[call];
          while (g_.next_launched[tail] != kNone) tail = g_.next_launched[tail];
          g_.next_launched[tail] = n;
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

  uint32_t graph_launch_before(int64_t time) {
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
  const std::vector<int64_t>& queued_at(uint32_t lane_index) {
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
  uint32_t last_queued_before(uint32_t lane_index, int64_t time) {
    const auto& keys = queued_at(lane_index);
    auto it = std::lower_bound(keys.begin(), keys.end(), time);
    if (it == keys.begin()) return kNone;
    return g_.lanes[lane_index].nodes[static_cast<size_t>(it - keys.begin()) - 1];
  }

  uint32_t first_queued_from(uint32_t lane_index, int64_t time) {
    const auto& keys = queued_at(lane_index);
    auto it = std::lower_bound(keys.begin(), keys.end(), time);
    if (it == keys.end()) return kNone;
    return g_.lanes[lane_index].nodes[static_cast<size_t>(it - keys.begin())];
  }

  uint32_t lane_of_stream(int64_t device, int64_t stream) const {
    auto found = lane_by_stream_.find({static_cast<int32_t>(device), stream});
    return found != lane_by_stream_.end() ? found->second : kNone;
  }

  EventIndex call_with_correlation(int64_t correlation) {
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
  uint32_t recorded_op(EventIndex sync_record, int64_t device) {
    auto record_corr = tl_.arg_int(sync_record, "wait_on_cuda_event_record_corr_id");
    auto stream = tl_.arg_int(sync_record, "wait_on_stream");
    if (!record_corr || !stream || *record_corr < 0 || *stream < 0) return kNone;
    EventIndex record_call = call_with_correlation(*record_corr);
    uint32_t lane = lane_of_stream(device, *stream);
    if (record_call == kNone || lane == kNone) return kNone;
    return last_queued_before(lane, ev_.ts_ns[record_call]);
  }

  // cudaEventRecord on one stream -> cudaStreamWaitEvent on another (the `Stream Wait Event` records).
  void stream_event_edges() {
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
  void wait_edges() {
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
        // A launch that returns only after its op ended (CUDA_LAUNCH_BLOCKING, pageable copies).
        if (drained.empty() && g_.first_launched[n] != kNone) {
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

  // A wait for a loader worker's batch that ends while the GPU still has queued work is the loop's slack:
  // the workers hand out batches at the pace the loop takes them, and the loop goes only as fast as the
  // GPU, so the wait ends when the GPU's queue is down to what it held then (its end minus the same lead).
  // Faster GPU work ends it sooner. A wait that ends with the GPU's queue empty is the workers' own pace and
  // keeps its length. (The step ledger's GPU bound counts such a fetch as elastic too, docs/ANALYSIS.md.)
  void worker_wait_edges() {
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

  void records_drain(EventIndex record, uint32_t last_launched, std::vector<uint32_t>& drained) {
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

  // The main-thread node running at `time`, or kNone.
  uint32_t main_node_at(int64_t time) const {
    const Lane& main = g_.lanes[g_.main_lane];
    auto it = std::upper_bound(main.nodes.begin(), main.nodes.end(), time,
                               [this](int64_t t, uint32_t n) { return t < g_.nodes[n].start_ns; });
    if (it == main.nodes.begin()) return kNone;
    const Node& node = g_.nodes[*(it - 1)];
    if (time > node.start_ns + node.dur_ns && it == main.nodes.end()) return kNone;
    return *(it - 1);
  }

  // Walks a helper thread (by positions in its lane): `start(k, m)` for its first node (it begins where
  // main-thread node m then was), `hand_off(k, m)` for a gap of its during which the main thread began
  // something new (m, running at the gap's end), and `burst(first, last)` for each run of its nodes between
  // two hand-offs (the helper's own gaps included: a gap the main thread spent entirely inside one node
  // keeps its length).
  template <class Start, class HandOff, class Burst>
  void walk_helper(const Lane& lane, Start start, HandOff hand_off, Burst burst) const {
    size_t burst_first = kNone, burst_last = kNone;
    for (size_t k = 0; k < lane.nodes.size(); ++k) {
      const Node& node = g_.nodes[lane.nodes[k]];
      const bool gap = node.kind == NodeKind::HostGap && k != 0;
      if (!gap && k != 0) {
        if (burst_first == kNone) burst_first = k;
        burst_last = k;
        continue;
      }
      const uint32_t m = main_node_at(k == 0 ? node.start_ns : node.start_ns + node.dur_ns);
      if (m == kNone) continue;
      if (k == 0) {
        start(k, m);
        burst_first = burst_last = k;
        continue;
      }
      if (g_.nodes[m].start_ns <= node.start_ns) continue;  // the helper's own gap
      if (burst_first != kNone) burst(burst_first, burst_last);
      burst_first = burst_last = kNone;
      hand_off(k, m);
    }
    if (burst_first != kNone) burst(burst_first, burst_last);
  }

  // The main-thread node that spans a whole helper burst and may wait for it (not a call or a wait), or kNone.
  uint32_t spanning_waiter(uint32_t first, uint32_t last) const {
    const int64_t b0 = g_.nodes[first].start_ns;
    const int64_t b1 = g_.nodes[last].start_ns + g_.nodes[last].dur_ns;
    const uint32_t m = main_node_at(b0);
    if (m == kNone) return kNone;
    const Node& waiter = g_.nodes[m];
    if (waiter.kind == NodeKind::Call || waiter.kind == NodeKind::HostWait) return kNone;
    if (waiter.start_ns > b0 || waiter.start_ns + waiter.dur_ns < b1) return kNone;
    return m;
  }

  // How the helper threads follow the main thread, read once on the uncut main thread (by lane and
  // position, which cutting the main thread does not change): where each starts and is handed work, and
  // the bursts a main-thread piece spans whole.
  void read_helpers() {
    if (g_.main_lane == kNone) return;
    for (uint32_t l = 0; l < g_.lanes.size(); ++l) {
      if (l == g_.main_lane) continue;
      const Lane& lane = g_.lanes[l];
      walk_helper(
          lane, [&](size_t k, uint32_t) { hand_offs_.push_back({l, k, g_.nodes[lane.nodes[k]].start_ns, true}); },
          [&](size_t k, uint32_t) {
            const Node& gap = g_.nodes[lane.nodes[k]];
            hand_offs_.push_back({l, k, gap.start_ns + gap.dur_ns, false});
          },
          [&](size_t first, size_t last) {
            const uint32_t f = lane.nodes[first], t = lane.nodes[last];
            if (spanning_waiter(f, t) == kNone) return;
            bursts_.push_back({l, last, g_.nodes[f].start_ns, g_.nodes[t].start_ns + g_.nodes[t].dur_ns});
          });
    }
  }

  // Helper threads (autograd's device thread, pin-memory, loader threads) start their bursts of work
  // when the main thread hands it to them: a hand-off gap ends where the main thread then was. When a
  // main-thread piece spans a whole burst (the main thread blocked in loss.backward() while the autograd
  // thread ran it; a thread that only holds the step markers while another does the work), the piece
  // waits for the burst. The main thread was cut at every such burst's edges, so the burst has pieces of
  // their own: they do no work, the one ending where the burst ends ends with it, and the instants after
  // it (the next piece, the step's end) follow the burst.
  void thread_edges() {
    if (g_.main_lane == kNone) return;
    for (const HandOff& h : hand_offs_) {
      const uint32_t n = g_.lanes[h.lane].nodes[h.position];
      const uint32_t m = main_node_at(h.at);
      if (m == kNone) continue;
      Node& node = g_.nodes[n];
      if (h.first) {
        node.anchored = false;
        add_edge(2 * m, 2 * n, h.at - g_.nodes[m].start_ns, EdgeKind::Thread);
      } else {
        node.work_ns = 0;
        add_edge(2 * m, 2 * n + 1, h.at - g_.nodes[m].start_ns, EdgeKind::Thread);
      }
    }
    const Lane& main = g_.lanes[g_.main_lane];
    for (const Burst& b : bursts_) {
      const uint32_t last = g_.lanes[b.lane].nodes[b.last];
      auto it = std::lower_bound(main.nodes.begin(), main.nodes.end(), b.start,
                                 [this](uint32_t n, int64_t t) { return g_.nodes[n].start_ns < t; });
      for (; it != main.nodes.end() && g_.nodes[*it].start_ns < b.end; ++it) {
        Node& waiter = g_.nodes[*it];
        waiter.work_ns = 0;
        if (waiter.start_ns + waiter.dur_ns == b.end) {
          add_edge(2 * last + 1, 2 * *it + 1, 0, EdgeKind::Thread);
        }
      }
    }
  }

  // Counting sort by target vertex (linear), then the outgoing index.
  void index_edges() {
    const size_t vertices = 2 * g_.nodes.size();
    g_.incoming.assign(vertices + 1, 0);
    g_.outgoing.assign(vertices + 1, 0);
    for (const Edge& e : g_.edges) {
      ++g_.incoming[e.to + 1];
      ++g_.outgoing[e.from + 1];
    }
    for (size_t v = 0; v < vertices; ++v) {
      g_.incoming[v + 1] += g_.incoming[v];
      g_.outgoing[v + 1] += g_.outgoing[v];
    }
    std::vector<Edge> sorted(g_.edges.size());
    std::vector<uint32_t> fill(g_.incoming.begin(), g_.incoming.end() - 1);
    for (const Edge& e : g_.edges) sorted[fill[e.to]++] = e;
    g_.edges = std::move(sorted);
    g_.out_edges.assign(g_.edges.size(), 0);
    fill.assign(g_.outgoing.begin(), g_.outgoing.end() - 1);
    for (uint32_t e = 0; e < g_.edges.size(); ++e) g_.out_edges[fill[g_.edges[e].from]++] = e;
  }

  const Analysis& a_;
  const Timeline& tl_;
  const Events& ev_;
  Graph& g_;
  NameFlags names_;
  StepWindow window_;
  std::map<std::pair<int32_t, int64_t>, uint32_t> lane_by_stream_;
  std::vector<uint32_t> worker_waits_;  // host nodes waiting in a multi-process loader's __next__
  struct HandOff {
    uint32_t lane;
    size_t position;  // the helper's node: its first (first) or a hand-off gap
    int64_t at;               // where the main thread was
    bool first;
  };
  struct Burst {
    uint32_t lane;
    size_t last;  // the burst's last node (position in its lane)
    int64_t start, end;
  };
  std::vector<HandOff> hand_offs_;
  std::vector<Burst> bursts_;  // the helper bursts a main-thread piece spans whole
  std::unordered_map<uint32_t, int32_t> launch_device_;
  std::unordered_map<uint32_t, std::vector<int64_t>> queued_at_;
  std::vector<uint32_t> graph_launches_;
  bool graph_launches_ready_ = false;
  std::unordered_map<int64_t, EventIndex> calls_by_correlation_;
  bool calls_by_correlation_ready_ = false;
};

}  // namespace

std::string_view to_string(Category category) {
  switch (category) {
    case Category::Compute: return "compute";
    case Category::Communication: return "communication";
    case Category::Copy: return "copies";
    case Category::Host: return "host";
    case Category::Sync: return "sync";
    case Category::DataLoader: return "data loader";
  }
  return "host";
}

StepWindow replay_window(const Analysis& analysis, size_t event_budget) {
  StepWindow window;
  const size_t n = analysis.steps.size();
  if (n == 0) return window;
  window.last = static_cast<uint32_t>(n - 1);
  std::vector<uint32_t> steady;
  for (uint32_t k = 0; k < n; ++k) {
    if (analysis.is_steady(k)) steady.push_back(k);
  }
  if (steady.empty()) return window;
  window.measured_first = steady.front();
  window.measured_last = steady.back();
  size_t events = 0, steady_events = 0;
  for (uint32_t step : analysis.event_step) {
    if (step == kNone) continue;
    ++events;
    if (analysis.is_steady(step)) ++steady_events;
  }
  if (events <= event_budget || steady.size() <= kReplayMinSteps) return window;
  const double per_step = static_cast<double>(steady_events) / static_cast<double>(steady.size());
  const size_t w = std::max(kReplayMinSteps, static_cast<size_t>(static_cast<double>(event_budget) / std::max(1.0, per_step)));
  if (w >= steady.size()) return window;
  // Consecutive steady steps whose mean period is closest to the trace's: a sliding sum, linear in steps.
  const double target = analysis.step_period_ns() * static_cast<double>(w);
  double sum = 0, best = std::numeric_limits<double>::max();
  size_t best_from = 0;
  for (size_t k = 0; k < steady.size(); ++k) {
    sum += static_cast<double>(analysis.steps[steady[k]].period_ns);
    if (k >= w) sum -= static_cast<double>(analysis.steps[steady[k - w]].period_ns);
    if (k + 1 < w) continue;
    const double off = std::fabs(sum - target);
    if (off < best) {
      best = off;
      best_from = k + 1 - w;
    }
  }
  window.sampled = true;
  window.measured_first = steady[best_from];
  window.measured_last = steady[best_from + w - 1];
  window.first = window.measured_first > 0 ? window.measured_first - 1 : 0;
  window.last = std::min<uint32_t>(window.measured_last + 1, static_cast<uint32_t>(n - 1));
  return window;
}

Graph build_graph(const Analysis& analysis, const StepWindow& window) {
  Graph graph;
  if (analysis.timeline == nullptr) return graph;
  Builder(analysis, window, graph).build();
  return graph;
}

Graph build_graph(const Analysis& analysis) {
  return build_graph(analysis, replay_window(analysis, std::numeric_limits<size_t>::max()));
}

}  // namespace ptadvise::whatif
