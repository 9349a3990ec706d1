// Which launch calls the step graph takes for host waits: a call that returned after its op ended waits
// for it only when the thread's launches block (CUDA_LAUNCH_BLOCKING=1) or the op is a pageable copy;
// a tiny kernel on an idle stream that ends before its launch returns is not waited for.
#include <doctest/doctest.h>

#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/whatif.h"
#include "trace_builder.h"

using namespace ptadvise;

namespace {

enum class Launches { Asynchronous, Blocking };

// Step k runs from 1000 + 200k µs: 8 kernel launches, a stream sync, then one more launch on the idle
// stream and a device-to-host copy (pageable or pinned).
// `gpu_offset_us` moves every GPU timestamp, as an inexact alignment of the GPU's clock with the host's does.
Timeline launch_steps(Launches launches, const std::string& copy_destination, double gpu_offset_us = 0) {
  const double o = gpu_offset_us;
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int k = 0; k < 3; ++k) {
    const double s = 1000 + 200.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 200);
    if (launches == Launches::Asynchronous) {
      // The first kernel runs 100 µs; the others queue behind it, 5 µs each, and end by +145.
      for (int i = 0; i < 8; ++i) {
        const double gpu_start = i == 0 ? s + 10 : s + 110 + 5 * (i - 1);
        trace.launch(i == 0 ? "gemm_kernel" : "small_kernel", s + 5 + 8 * i, 5, gpu_start + o, i == 0 ? 100 : 5);
      }
      trace.runtime("cudaStreamSynchronize", s + 70, 76, trace.next_correlation());
    } else {
      // Each launch returns once its kernel ended: 2 µs of latency, the kernel, 2 µs back; done by +126.
      double t = s + 5;
      for (int i = 0; i < 8; ++i) {
        const double kernel_us = i == 0 ? 60 : 3;
        trace.launch(i == 0 ? "gemm_kernel" : "small_kernel", t, kernel_us + 4, t + 2 + o, kernel_us);
        t += kernel_us + 5;
      }
    }
    // On the idle stream: the kernel runs 2 µs and ends before its 6 µs launch call returns.
    trace.launch("tiny_kernel", s + 150, 6, s + 152 + o, 2);
    const int64_t copy = trace.next_correlation();
    trace.runtime("cudaMemcpyAsync", s + 160, 20, copy);
    trace.memcpy("DtoH", "Device", copy_destination, s + 165 + o, 10, 4096, copy);
    trace.flow(copy, s + 160, 1, s + 165 + o, 0, 7);
  }
  return trace.load();
}

EventIndex nth(const Timeline& timeline, std::string_view name, int n) {
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) == name && n-- == 0) return i;
  }
  return kNone;
}

whatif::NodeKind kind_of(const whatif::Graph& graph, EventIndex call) {
  REQUIRE(call != kNone);
  REQUIRE(graph.node_of_event[call] != kNone);
  return graph.nodes[graph.node_of_event[call]].kind;
}

}  // namespace

TEST_CASE("whatif: a tiny kernel that ends before its launch returns is not waited for; blocking launches and pageable copies are") {
  SUBCASE("asynchronous launches, a pageable copy") {
    Timeline timeline = launch_steps(Launches::Asynchronous, "Pageable");
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steady_step_count() == 3);
    const whatif::Graph graph = whatif::build_graph(analysis);
    for (int k = 0; k < 3; ++k) {
      CAPTURE(k);
      // Launch 9 of the step outlasted its kernel, 1 of 9 launches: not a wait.
      CHECK(kind_of(graph, nth(timeline, "cudaLaunchKernel", 9 * k + 8)) == whatif::NodeKind::Call);
      CHECK(kind_of(graph, nth(timeline, "cudaLaunchKernel", 9 * k)) == whatif::NodeKind::Call);
      CHECK(kind_of(graph, nth(timeline, "cudaStreamSynchronize", k)) == whatif::NodeKind::HostWait);
      // The driver copies to pageable memory before the call returns.
      CHECK(kind_of(graph, nth(timeline, "cudaMemcpyAsync", k)) == whatif::NodeKind::HostWait);
    }
    CHECK(graph.inferred_waits == 6);
  }
  SUBCASE("asynchronous launches, a pinned copy") {
    Timeline timeline = launch_steps(Launches::Asynchronous, "Pinned");
    Analysis analysis = analyze(timeline);
    const whatif::Graph graph = whatif::build_graph(analysis);
    for (int k = 0; k < 3; ++k) {
      CAPTURE(k);
      CHECK(kind_of(graph, nth(timeline, "cudaMemcpyAsync", k)) == whatif::NodeKind::Call);
      CHECK(kind_of(graph, nth(timeline, "cudaLaunchKernel", 9 * k + 8)) == whatif::NodeKind::Call);
    }
    CHECK(graph.inferred_waits == 3);  // the stream syncs alone
  }
  SUBCASE("blocking launches (CUDA_LAUNCH_BLOCKING=1)") {
    Timeline timeline = launch_steps(Launches::Blocking, "Pinned");
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steady_step_count() == 3);
    const whatif::Graph graph = whatif::build_graph(analysis);
    for (int k = 0; k < 3; ++k) {
      CAPTURE(k);
      for (int i = 0; i < 9; ++i) {
        CAPTURE(i);
        CHECK(kind_of(graph, nth(timeline, "cudaLaunchKernel", 9 * k + i)) == whatif::NodeKind::HostWait);
      }
    }
    // With every launch blocking, the copy's call waits for its copy too, pinned or not.
    CHECK(kind_of(graph, nth(timeline, "cudaMemcpyAsync", 1)) == whatif::NodeKind::HostWait);
    CHECK(graph.inferred_waits == 30);
    const whatif::ReplayResult unchanged = whatif::replay(graph);
    CHECK(unchanged.replayed_step_ms == doctest::Approx(unchanged.measured_step_ms));
  }
}

TEST_CASE("analysis: which calls wait for their op does not depend on the offset between the host and GPU clocks") {
  for (const double offset_us : {-10.0, -1.0, 0.0, 1.0, 10.0}) {
    CAPTURE(offset_us);
    {
      // Asynchronous launches: with the GPU clock early, most small kernels seem to end before their launch
      // returns; the 100 µs kernel's 5 µs launch never spans it, so the thread does not block.
      Timeline timeline = launch_steps(Launches::Asynchronous, "Pageable", offset_us);
      Analysis analysis = analyze(timeline);
      REQUIRE(analysis.blocking_launches.size() == timeline.tracks.size());
      const EventIndex launch = nth(timeline, "cudaLaunchKernel", 0);
      CHECK(analysis.blocking_launches[timeline.events.track[launch]] == 0);
      for (int k = 0; k < 3; ++k) {
        CHECK_FALSE(analysis.call_waits_for_op(nth(timeline, "cudaLaunchKernel", 9 * k + 8)));
        CHECK(analysis.call_waits_for_op(nth(timeline, "cudaMemcpyAsync", k)));  // pageable: the driver copies
      }
    }
    {
      // Blocking launches: with the GPU clock late, the kernels seem to end after their call returned; the
      // calls still last as long as their kernels.
      Timeline timeline = launch_steps(Launches::Blocking, "Pinned", offset_us);
      Analysis analysis = analyze(timeline);
      const EventIndex launch = nth(timeline, "cudaLaunchKernel", 0);
      CHECK(analysis.blocking_launches[timeline.events.track[launch]] == 1);
      for (int i = 0; i < 27; ++i) CHECK(analysis.call_waits_for_op(nth(timeline, "cudaLaunchKernel", i)));
    }
  }
}
