// The builder of the step graph (graph.cpp: the threads and streams cut into nodes; graph_gpu_edges.cpp:
// the edges between the host and the GPU; graph_threads.cpp: the edges between threads). Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
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
  // An edge costs itself, its sorted copy (index_edges) and two index slots.
  static constexpr size_t kEdgeBytes = 2 * sizeof(Edge) + 2 * sizeof(uint32_t);
  size_t edge_limit_ = SIZE_MAX;  // set by build(): the edges a quarter of the memory available holds
  [[noreturn]] void throw_over_budget() const;
  uint32_t add_node(const Node& node) {
    g_.nodes.push_back(node);
    return static_cast<uint32_t>(g_.nodes.size() - 1);
  }

  void add_edge(uint32_t from_vertex, uint32_t to_vertex, int64_t delay, EdgeKind kind) {
    // Edges are the one part of the graph not bounded by the events: a device-wide sync waits for every
    // stream (100,000 syncs x 2,000 streams: 9 GB). Past the budget: BudgetExceeded, exit 2.
    if (g_.edges.size() >= edge_limit_) throw_over_budget();
    g_.edges.push_back({from_vertex, to_vertex, delay, kind});
  }

  // graph.cpp (each commented where it is defined)
  void host_lanes(const std::vector<int64_t>& main_cuts);
  void host_lane(uint32_t track, const std::vector<int64_t>& cuts);
  void gpu_lane(uint32_t track);
  void index_edges();

  // graph_gpu_edges.cpp
  void order_edges();
  void launch_edges();
  uint32_t graph_launch_before(int64_t time);
  const std::vector<int64_t>& queued_at(uint32_t lane_index);
  uint32_t last_queued_before(uint32_t lane_index, int64_t time);
  uint32_t first_queued_from(uint32_t lane_index, int64_t time);
  uint32_t lane_of_stream(int64_t device, int64_t stream) const;
  EventIndex call_with_correlation(int64_t correlation);
  uint32_t recorded_op(EventIndex sync_record, int64_t device);
  void stream_event_edges();
  void wait_edges();
  void records_drain(EventIndex record, uint32_t last_launched, std::vector<uint32_t>& drained);
  void worker_wait_edges();

  // graph_threads.cpp
  uint32_t main_node_at(int64_t time) const;
  template <class OnStart, class OnHandOff, class OnBurst>
  void walk_helper(const Lane& lane, OnStart start, OnHandOff hand_off, OnBurst burst) const;
  uint32_t spanning_waiter(uint32_t first, uint32_t last) const;
  std::optional<int64_t> idle_waiter(uint32_t first, uint32_t last) const;
  void read_helpers();
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
  struct IdleWait {
    uint32_t lane;
    size_t last;         // the burst's last node (position in its lane)
    int64_t burst_end;
    int64_t gap_end;     // where the main thread's gap ends
  };
  std::vector<IdleWait> idle_waits_;  // bursts the main thread waited for in a gap of its own (idle_waiter)
  std::unordered_map<uint32_t, int32_t> launch_device_;
  std::unordered_map<uint32_t, std::vector<int64_t>> queued_at_;
  std::vector<uint32_t> graph_launches_;
  bool graph_launches_ready_ = false;
  std::unordered_map<int64_t, EventIndex> calls_by_correlation_;
  bool calls_by_correlation_ready_ = false;
};

}  // namespace ptadvise::whatif::detail
