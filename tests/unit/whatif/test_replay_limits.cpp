// The replay's limits: graphs of hostile size (one call credited with every GPU op, syncs x streams past
// the memory budget), delays that would overflow, and a sampled window's reservation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/io.h"
#include "ptadvise/whatif.h"
#include "gemm_steps.h"
#include "trace_builder.h"

using namespace ptadvise;
using ptadvise::testing::gemm_steps;
using ptadvise::testing::three_steps;

TEST_CASE("whatif: a call credited with 150,000 GPU ops lists them all, in lane order, in linear time") {
  // A writer that gives every launch the same correlation id links every kernel to one call. The graph
  // appended each op by walking the call's list to its end: 1e10 steps here (seconds; minutes under the
  // sanitizers), now one step each.
  const int ops = 150000;
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 1000, 10.0 * ops);
  trace.annotation("ProfilerStep#2", 1000 + 10.0 * ops, 10);
  for (int i = 0; i < ops; ++i) {
    const double t = 1001 + 10.0 * i;
    trace.runtime("cudaLaunchKernel", t, 1, 1);
    trace.kernel("k", t + 2, 2, 1, 0, 7 + i % 4);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const whatif::Graph graph = whatif::build_graph(analysis);
  uint32_t call = kNone;
  size_t listed = 0, credited = 0;
  std::vector<uint32_t> per_lane_last(graph.lanes.size(), kNone);
  bool in_lane_order = true;
  for (uint32_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.first_launched[n] == kNone) continue;
    CHECK(call == kNone);  // one call launched them all
    call = n;
    for (uint32_t op = graph.first_launched[n]; op != kNone; op = graph.next_launched[op]) {
      ++listed;
      credited += graph.launched_by[op] == n;
      const uint32_t lane = graph.nodes[op].lane;
      in_lane_order = in_lane_order && (per_lane_last[lane] == kNone || per_lane_last[lane] < op);
      per_lane_last[lane] = op;
    }
  }
  REQUIRE(call != kNone);
  CHECK(in_lane_order);
  size_t gpu_ops = 0;
  for (const whatif::Node& node : graph.nodes) gpu_ops += node.kind == whatif::NodeKind::GpuOp;
  CHECK(listed == gpu_ops);
  CHECK(credited == listed);
  CHECK(listed > 100000);
}

TEST_CASE("whatif: edges beyond the memory budget are refused with BudgetExceeded, not allocated") {
  // Every cudaDeviceSynchronize waits for the last op of every stream: 2,000 syncs x 200 streams make
  // 400,000 edges (22 MB with their indexes). 100,000 syncs x 2,000 streams took 9 GB before.
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 1000, 30000);
  trace.annotation("ProfilerStep#2", 31000, 30000);
  for (int s = 0; s < 200; ++s) trace.launch("k", 1001 + s, 0.5, 1001.6 + s, 0.2, 0, 7 + s);
  for (int i = 0; i < 2000; ++i) trace.runtime("cudaDeviceSynchronize", 1300 + 10.0 * i, 5, trace.next_correlation());
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  CHECK(whatif::build_graph(analysis).edges.size() > 400000);  // within the budget it is built as before
  setenv("PTADVISE_MEMORY_LIMIT", "64MiB", 1);
  std::string message;
  try {
    (void)whatif::build_graph(analysis);
  } catch (const BudgetExceeded& e) {  // a std::bad_alloc: every carrier of out-of-memory carries it
    message = e.what();
  }
  unsetenv("PTADVISE_MEMORY_LIMIT");
  CHECK(message == "trace.json: the what-if graph needs more than 16 MiB for its edges, a quarter of the memory "
                   "available (its syncs wait on 201 threads and streams); set PTADVISE_MEMORY_LIMIT to change the "
                   "limit, or pass --no-whatif");
}

TEST_CASE("whatif: replayed times saturate at 2^61 ns instead of overflowing") {
  // Delays of 2^60 ns on every edge (what a batch grown 1,024x could make of a trace of long ops): the
  // chains' sums passed int64's limit and wrapped (undefined behaviour).
  Timeline timeline = three_steps();
  Analysis analysis = analyze(timeline);
  whatif::Graph graph = whatif::build_graph(analysis);
  REQUIRE(graph.edges.size() > 10);
  for (whatif::Edge& edge : graph.edges) edge.delay_ns = int64_t{1} << 60;
  const whatif::ReplayResult result = whatif::replay(graph, {}, whatif::PathDetail::Pieces);
  int64_t latest = 0;
  for (int64_t t : result.vertex_ns) {
    CHECK(t >= -(int64_t{1} << 61));
    CHECK(t <= int64_t{1} << 61);
    latest = std::max(latest, t);
  }
  CHECK(latest == int64_t{1} << 61);
  CHECK(std::isfinite(result.replayed_step_ms));
}

TEST_CASE("whatif: a sampled window's graph reserves room for the window's events, not the trace's") {
  // 200 steps of 5 events: a budget of 50 events samples about ten of them (and one on each side).
  Timeline timeline = gemm_steps(200);
  Analysis analysis = analyze(timeline);
  const whatif::StepWindow window = whatif::replay_window(analysis, 50);
  REQUIRE(window.sampled);
  REQUIRE(window.last - window.first + 1 <= 12);
  const whatif::Graph graph = whatif::build_graph(analysis, window);
  size_t window_events = 0;
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    window_events += analysis.event_step[i] != kNone && window.holds(analysis.event_step[i]) ? 1 : 0;
  }
  CHECK(window_events == 5 * (window.last - window.first + 1));
  // The trace's 1,000 events once reserved 1,500 nodes for every window (the edges are copied to their
  // exact size when they are indexed).
  CHECK(graph.nodes.capacity() <= std::max(window_events * 3 / 2, graph.nodes.size() * 2));
  CHECK(graph.nodes.capacity() < timeline.events.size() / 4);
}
