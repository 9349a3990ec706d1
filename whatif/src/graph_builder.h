// The builder of the step graph (graph.cpp: the threads and streams cut into nodes; graph_gpu_edges.cpp:
// the edges between the host and the GPU; graph_threads.cpp: the edges between threads). Internal.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "names.h"
#include "ptadvise/whatif.h"

namespace ptadvise::whatif::detail {

constexpr int64_t kToleranceNs = 1000;  // host and GPU timestamps are rounded to µs separately

inline bool is_call(EventKind kind) { return kind == EventKind::Runtime || kind == EventKind::Driver; }

class Builder {
 public:
  Builder(const Analysis& analysis, const StepWindow& window, Graph& graph)
      : a_(analysis), tl_(*analysis.timeline), ev_(tl_.events), g_(graph), names_(tl_.strings), window_(window) {}
  void build();

 private:
  uint32_t add_node(const Node& node) {
    g_.nodes.push_back(node);
    return static_cast<uint32_t>(g_.nodes.size() - 1);
  }

  void add_edge(uint32_t from_vertex, uint32_t to_vertex, int64_t delay, EdgeKind kind) {
    g_.edges.push_back({from_vertex, to_vertex, delay, kind});
  }

  // graph.cpp
  void host_lanes(const std::vector<int64_t>& main_cuts);
  // Cuts a thread's events into segments, each owned by the innermost event running in it, and at `cuts`
  // (sorted times).
  void host_lane(uint32_t track, const std::vector<int64_t>& cuts);
  void gpu_lane(uint32_t track);
  // Counting sort by target vertex (linear), then the outgoing index.
  void index_edges();

  // graph_gpu_edges.cpp
  // Host lanes: program order. GPU lanes: stream order. An op launched while the op before it still ran,
  // and an op without a launch call, keeps the gap it had after the op before it: the GPU's own time
  // between them (scheduling, other streams), which a faster op before it does not remove.
  void order_edges();
  // Launch latency: measured when the stream was idle when the call queued the op (nothing but the launch
  // held it); when the op was queued behind its stream, the median latency of the device's ops queued on
  // an idle stream (the smallest measured latency when there is none), never more than measured: the rest
  // of its wait was for its stream (order edge). Measuring from the op's start alone would take a GPU-bound
  // stream's queueing for launch latency and tie the GPU to the host.
  void launch_edges();
  uint32_t graph_launch_before(int64_t time);
  // Per GPU lane: when each op was queued (its launch call's start; running maximum, so it is sorted).
  const std::vector<int64_t>& queued_at(uint32_t lane_index);
  // The last op of the lane queued before `time`, or kNone.
  uint32_t last_queued_before(uint32_t lane_index, int64_t time);
  uint32_t first_queued_from(uint32_t lane_index, int64_t time);
  uint32_t lane_of_stream(int64_t device, int64_t stream) const;
  EventIndex call_with_correlation(int64_t correlation);
  // The op a cudaEventRecord captured: the last op queued on the recorded stream before the record call.
  uint32_t recorded_op(EventIndex sync_record, int64_t device);
  // cudaEventRecord on one stream -> cudaStreamWaitEvent on another (the `Stream Wait Event` records).
  void stream_event_edges();
  // Host waits: the GPU work each one drains, and how long it took after that work ended.
  void wait_edges();
  void records_drain(EventIndex record, uint32_t last_launched, std::vector<uint32_t>& drained);
  // A wait for a loader worker's batch that ends while the GPU still has queued work is the loop's slack:
  // the workers hand out batches at the pace the loop takes them, and the loop goes only as fast as the
  // GPU, so the wait ends when the GPU's queue is down to what it held then (its end minus the same lead).
  // Faster GPU work ends it sooner. A wait that ends with the GPU's queue empty is the workers' own pace and
  // keeps its length. (The step ledger's GPU bound counts such a fetch as elastic too, docs/ANALYSIS.md.)
  void worker_wait_edges();

  // graph_threads.cpp
  // The main-thread node running at `time`, or kNone.
  uint32_t main_node_at(int64_t time) const;
  // Walks a helper thread (by positions in its lane): `start(k, m)` for its first node (it begins where
  // main-thread node m then was), `hand_off(k, m)` for a gap of its during which the main thread began
  // something new (m, running at the gap's end), and `burst(first, last)` for each run of its nodes between
  // two hand-offs (the helper's own gaps included: a gap the main thread spent entirely inside one node
  // keeps its length).
  template <class OnStart, class OnHandOff, class OnBurst>
  void walk_helper(const Lane& lane, OnStart start, OnHandOff hand_off, OnBurst burst) const;
  // The main-thread node that spans a whole helper burst and may wait for it (not a call or a wait), or kNone.
  uint32_t spanning_waiter(uint32_t first, uint32_t last) const;
  // How the helper threads follow the main thread, read once on the uncut main thread (by lane and
  // position, which cutting the main thread does not change): where each starts and is handed work, and
  // the bursts a main-thread piece spans whole.
  void read_helpers();
  // Helper threads (autograd's device thread, pin-memory, loader threads) start their bursts of work
  // when the main thread hands it to them: a hand-off gap ends where the main thread then was. When a
  // main-thread piece spans a whole burst (the main thread blocked in loss.backward() while the autograd
  // thread ran it; a thread that only holds the step markers while another does the work), the piece
  // waits for the burst. The main thread was cut at every such burst's edges, so the burst has pieces of
  // their own: they do no work, the one ending where the burst ends ends with it, and the instants after
  // it (the next piece, the step's end) follow the burst.
  void thread_edges();

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

  bool in_window(EventIndex i) const { return a_.event_step[i] != kNone && window_.holds(a_.event_step[i]); }

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
    int64_t at;  // where the main thread was
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

}  // namespace ptadvise::whatif::detail
