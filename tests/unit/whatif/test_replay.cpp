// The replay's semantics on a hand-built trace with known answers: a step launches one kernel and waits
// for it with cudaStreamSynchronize; every figure below follows from the event times.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/whatif.h"
#include "gemm_steps.h"
#include "trace_builder.h"

using namespace ptadvise;
using ptadvise::testing::gemm_steps;
using ptadvise::testing::three_steps;

namespace {

EventIndex find(const Timeline& timeline, std::string_view name, int nth = 0) {
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) == name && nth-- == 0) return i;
  }
  return kNone;
}

std::vector<EventIndex> all(const Timeline& timeline, std::string_view name) {
  std::vector<EventIndex> out;
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) == name) out.push_back(i);
  }
  return out;
}

}  // namespace

TEST_CASE("whatif: the unchanged replay reproduces the period and splits it along the critical path") {
  Timeline timeline = three_steps();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 3);
  whatif::Graph graph = whatif::build_graph(analysis);
  CHECK(graph.inferred_waits == 3);
  const EventIndex sync = find(timeline, "cudaStreamSynchronize");
  REQUIRE(graph.node_of_event[sync] != kNone);
  CHECK(graph.nodes[graph.node_of_event[sync]].kind == whatif::NodeKind::HostWait);
  CHECK(graph.nodes[graph.node_of_event[sync]].work_ns == 2000);  // 2 µs after the kernel ended

  whatif::ReplayResult result = whatif::replay(graph);
  CHECK(result.measured_step_ms == doctest::Approx(0.1));
  CHECK(result.replayed_step_ms == doctest::Approx(0.1));
  // Per step: Python and the op before the launch 5 µs, launch latency 5 µs (host), kernel 60 µs, the
  // sync's return 2 µs, Python after it 28 µs.
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Compute)] == doctest::Approx(0.060));
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Sync)] == doctest::Approx(0.002));
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Host)] == doctest::Approx(0.038));
  REQUIRE(!result.critical_top.empty());
  CHECK(result.critical_top.front().name == "gemm_kernel");
  CHECK(whatif::replay_discrepancy(graph, result).empty());
}

TEST_CASE("whatif: a faster kernel shortens a step that waits for it; without the wait the GPU sets the pace") {
  Timeline timeline = three_steps();
  Analysis analysis = analyze(timeline);
  whatif::Graph graph = whatif::build_graph(analysis);

  whatif::Fix faster;
  faster.spec.primitive = whatif::Primitive::Scale;
  faster.spec.factor = 0.5;
  faster.events = all(timeline, "gemm_kernel");
  CHECK(whatif::replay(graph, {faster}).replayed_step_ms == doctest::Approx(0.070));

  whatif::Fix no_wait;
  no_wait.spec.primitive = whatif::Primitive::MakeAsync;
  no_wait.events = all(timeline, "cudaStreamSynchronize");
  // The host needs 45 µs per step, the GPU 60 µs: the stream order now sets the period.
  CHECK(whatif::replay(graph, {no_wait}).replayed_step_ms == doctest::Approx(0.060));
  // Both together: the host's 45 µs.
  CHECK(whatif::replay(graph, {no_wait, faster}).replayed_step_ms == doctest::Approx(0.045));

  whatif::Fix removed;
  removed.spec.primitive = whatif::Primitive::Remove;
  removed.events = all(timeline, "aten::mm");  // the op, its launch and its kernel: the sync waits for nothing
  // Per step: 4 µs of Python, the op's 7 µs gone, 4 µs to the sync, its own 2 µs, 28 µs of Python.
  CHECK(whatif::replay(graph, {removed}).replayed_step_ms == doctest::Approx(0.038));
}

TEST_CASE("whatif: data loading in background workers leaves the training thread's own time") {
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int k = 0; k < 4; ++k) {
    const double s = 1000 + 100.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 100);
    trace.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", s + 1, 80);
    trace.launch("conv_kernel", s + 85, 5, s + 91, 8);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 4);
  whatif::Graph graph = whatif::build_graph(analysis);
  whatif::Fix workers;
  workers.spec.primitive = whatif::Primitive::Background;
  workers.spec.workers = 1;
  workers.spec.prefetch = 1;
  workers.events = all(timeline, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  // One worker with one batch ready: batch 1 is ready at once; each later one takes the worker 80 µs,
  // longer than the 20 µs the loop needs, so the loop waits for it: 80 µs per step from the second on.
  whatif::ReplayResult one = whatif::replay(graph, {workers});
  CHECK(one.replayed_step_ms == doctest::Approx((0.020 + 0.080 + 0.080 + 0.020) / 4).epsilon(0.05));
  workers.spec.workers = 4;
  workers.spec.prefetch = 2;
  // Enough workers: the loader is off the path; the step is the host's 20 µs.
  CHECK(whatif::replay(graph, {workers}).replayed_step_ms == doctest::Approx(0.020));
}

TEST_CASE("whatif: a wait for loader workers that ends with GPU work queued follows the GPU; one that ends idle does not") {
  // Per step (100 µs): the loop waits in a multi-process loader's __next__ from +1 to +1+wait, launches a
  // kernel (+4 .. +9 after the wait) and runs 30 µs of Python. The kernels run back to back (GPU-bound) when
  // they take 100 µs; at 10 µs the GPU drains during every wait.
  auto loop = [](double kernel_us, double wait_us) {
    testing::TraceBuilder trace(testing::Era::Kineto2023);
    trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
    for (int k = 0; k < 5; ++k) {
      const double s = 1000 + 100.0 * k;
      trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 100);
      trace.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", s + 1, wait_us);
      const double launch = s + 1 + wait_us + 4;
      const double gpu_start = kernel_us >= 100 ? 1070 + 100.0 * k : launch + 10;
      trace.launch("gemm_kernel", launch, 5, gpu_start, kernel_us);
    }
    return trace.load();
  };
  SUBCASE("GPU-bound: the wait ends 9 µs before the GPU's queue does, and shrinks with faster kernels") {
    Timeline timeline = loop(100, 60);
    Analysis analysis = analyze(timeline);
    whatif::Graph graph = whatif::build_graph(analysis);
    CHECK(graph.elastic_loader_waits == 4);  // the first step's wait ends with nothing queued yet
    CHECK(whatif::replay(graph).replayed_step_ms == doctest::Approx(0.100));
    whatif::Fix faster;
    faster.spec.primitive = whatif::Primitive::Scale;
    faster.spec.factor = 0.5;
    faster.events = all(timeline, "gemm_kernel");
    // Steps 2-5: the GPU's 50 µs set the pace (the host needs 40 µs of its own); step 1 keeps its wait.
    CHECK(whatif::replay(graph, {faster}).replayed_step_ms == doctest::Approx((0.100 + 4 * 0.050) / 5));
  }
  SUBCASE("the GPU idles through the wait: the workers' pace, kept") {
    Timeline timeline = loop(10, 60);
    Analysis analysis = analyze(timeline);
    whatif::Graph graph = whatif::build_graph(analysis);
    CHECK(graph.elastic_loader_waits == 0);
    whatif::Fix faster;
    faster.spec.primitive = whatif::Primitive::Scale;
    faster.spec.factor = 0.5;
    faster.events = all(timeline, "gemm_kernel");
    CHECK(whatif::replay(graph, {faster}).replayed_step_ms == doctest::Approx(0.100));
  }
}

TEST_CASE("whatif: the replay times a lone step as the analysis does (a late-closed marker, a whole window)") {
  SUBCASE("a ProfilerStep the profiler's stop closed 100 ms after its last event") {
    testing::TraceBuilder trace(testing::Era::Kineto2023);
    trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
    trace.annotation("ProfilerStep#1", 1000, 100000);
    trace.cpu_op("aten::add", 1010, 50);
    trace.launch("add_kernel", 1020, 5, 1030, 40);  // the step's content ends at 1070
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steps.size() == 1);
    REQUIRE(analysis.steps[0].period_ns == 70000);
    whatif::ReplayResult result = whatif::replay(whatif::build_graph(analysis));
    CHECK(result.measured_step_ms == doctest::Approx(0.070));
    CHECK(result.replayed_step_ms == doctest::Approx(0.070));
  }
  SUBCASE("no markers: the window is one step, timed from its first GPU op to the end of its last") {
    testing::TraceBuilder trace(testing::Era::Kineto2023);
    trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
    trace.cpu_op("setup", 0, 5000);  // 5 ms of host set-up before the first launch
    trace.launch("k1", 5000, 5, 5010, 40);
    trace.launch("k2", 5100, 5, 5110, 40);  // ends 5150
    trace.cpu_op("teardown", 5200, 3000);
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steps.size() == 1);
    REQUIRE(analysis.steps[0].gpu_span_only);
    whatif::ReplayResult result = whatif::replay(whatif::build_graph(analysis));
    CHECK(result.measured_step_ms == doctest::Approx(0.140));
    CHECK(result.replayed_step_ms == doctest::Approx(0.140));
  }
}

namespace {

// Step k runs from 1000 + 100k µs: Python 1 µs, aten::upsample (60 µs, launches nothing), a launch at +65,
// its 20 µs kernel at +71, cudaStreamSynchronize +75..+93, Python to +100. The sync leaves the GPU empty,
// so it idles through the next step's aten::upsample: the ledger charges that to cpu-work. With
// `fill_kernel_us`, the upsample also launches a fill_kernel that long (+56, on the GPU at +63).
Timeline upsample_then_sync_steps(double fill_kernel_us = 0) {
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int k = 0; k < 4; ++k) {
    const double s = 1000 + 100.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 100);
    trace.cpu_op("aten::upsample", s + 1, 60);
    if (fill_kernel_us > 0) trace.launch("fill_kernel", s + 56, 3, s + 63, fill_kernel_us);
    trace.launch("conv_kernel", s + 65, 5, s + 71, 20);
    trace.runtime("cudaStreamSynchronize", s + 75, 18, trace.next_correlation());
  }
  return trace.load();
}

}  // namespace

// The steps of upsample_then_sync_steps().
TEST_CASE("whatif: background with host_time charged_idle moves only the host time the ledger charged") {
  Timeline timeline = upsample_then_sync_steps();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 4);
  whatif::Graph graph = whatif::build_graph(analysis);
  whatif::Fix moved;
  moved.spec.primitive = whatif::Primitive::Background;
  moved.spec.host_time = whatif::TransformSpec::HostTime::ChargedIdle;
  int64_t charged = 0;
  for (uint32_t k = 0; k < analysis.idle.size(); ++k) {
    const IdleGap& gap = analysis.idle[k];
    if (gap.cause == IdleCause::CpuWork && gap.culprit != kNone && timeline.name(gap.culprit) == "aten::upsample") {
      moved.idle_gaps.push_back(k);
      charged += gap.duration_ns();
    }
  }
  // Every step: the GPU idles through all 60 µs of aten::upsample.
  CHECK(moved.idle_gaps.size() == 4);
  CHECK(charged == 4 * 60000);
  const whatif::ReplayResult base = whatif::replay(graph);
  CHECK(base.replayed_step_ms == doctest::Approx(0.100));
  CHECK(whatif::replay(graph, {moved}).replayed_step_ms == doctest::Approx(0.100 - 0.060));
  // Only the stretches move: without them nothing does.
  whatif::Fix nothing = moved;
  nothing.idle_gaps.clear();
  CHECK(whatif::replay(graph, {nothing}).replayed_step_ms == doctest::Approx(0.100));
  // Half a stretch: the other 30 µs of the op stay on the thread.
  std::vector<IdleGap> halves = analysis.idle;
  for (uint32_t k : moved.idle_gaps) analysis.idle[k].end_ns -= 30000;
  CHECK(whatif::replay(graph, {moved}).replayed_step_ms == doctest::Approx(0.100 - 0.030));
  analysis.idle = halves;
}

// The step markers on a thread that does nothing else (tid 2) and the work on another (tid 1): step k
// from 1000 + 100k µs runs aten::upsample (+1, 60 µs, launches nothing), a launch at +65, its 20 µs kernel
// at +71 and cudaStreamSynchronize +75..+93 on tid 1. The marker thread's piece spans the worker's burst
// and waits for it, so the step ends where the worker's work does: moving the 60 µs the ledger charged
// shortens every step by 60 µs, the last one (timed to its last event) included.
TEST_CASE("whatif: a marker thread's step waits for the work another thread does inside it") {
  for (int steps : {1, 4}) {
    CAPTURE(steps);
    testing::TraceBuilder trace(testing::Era::Kineto2023);
    trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
    for (int k = 0; k < steps; ++k) {
      const double s = 1000 + 100.0 * k;
      // A lone step's marker stays open until the profiler stops; the step is timed to its last event.
      trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, steps == 1 ? 5000 : 100, 2);
      trace.cpu_op("aten::upsample", s + 1, 60);
      trace.launch("conv_kernel", s + 65, 5, s + 71, 20);
      trace.runtime("cudaStreamSynchronize", s + 75, 18, trace.next_correlation());
    }
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steady_step_count() == static_cast<size_t>(steps));
    whatif::Graph graph = whatif::build_graph(analysis);
    REQUIRE(graph.main_lane != kNone);
    REQUIRE(timeline.tracks[graph.lanes[graph.main_lane].track].tid == 2);
    whatif::Fix moved;
    moved.spec.primitive = whatif::Primitive::Background;
    moved.spec.host_time = whatif::TransformSpec::HostTime::ChargedIdle;
    for (uint32_t k = 0; k < analysis.idle.size(); ++k) {
      const IdleGap& gap = analysis.idle[k];
      if (gap.cause == IdleCause::CpuWork && gap.culprit != kNone && timeline.name(gap.culprit) == "aten::upsample") {
        moved.idle_gaps.push_back(k);
      }
    }
    CHECK(moved.idle_gaps.size() == static_cast<size_t>(steps));
    const double measured = steps == 1 ? 0.093 : 0.100;  // the lone step: from its marker to the sync's end
    CHECK(whatif::replay(graph).replayed_step_ms == doctest::Approx(measured));
    CHECK(whatif::replay(graph, {moved}).replayed_step_ms == doctest::Approx(measured - 0.060));
    whatif::Fix nothing = moved;
    nothing.idle_gaps.clear();
    CHECK(whatif::replay(graph, {nothing}).replayed_step_ms == doctest::Approx(measured));
  }
}

// Two helper threads inside one marker-thread piece per step (markers on tid 2): tid 1 runs aten::mul
// +1..+61 and launches a 10 µs kernel at +55; tid 3 runs aten::add +30..+90. The marker thread's piece
// waits for both bursts; the stretch before the second burst starts (+1..+30) is the main thread's own
// (it handed that burst off then), so the unchanged replay keeps every step's 100 µs. Giving it no length
// would start tid 3 at +1 and replay 71 µs.
TEST_CASE("whatif: overlapping bursts of two helper threads replay as measured") {
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int k = 0; k < 4; ++k) {
    const double s = 1000 + 100.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 100, 2);
    trace.cpu_op("aten::mul", s + 1, 60);
    trace.launch("mul_kernel", s + 55, 5, s + 60, 10);
    trace.cpu_op("aten::add", s + 30, 60, "", 3);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 4);
  whatif::Graph graph = whatif::build_graph(analysis);
  REQUIRE(graph.main_lane != kNone);
  REQUIRE(timeline.tracks[graph.lanes[graph.main_lane].track].tid == 2);
  CHECK(whatif::replay(graph).replayed_step_ms == doctest::Approx(0.100));
  // With tid 3's add moved off its thread the piece waits only for tid 1's mul (+61), then its last 10 µs.
  whatif::Fix faster;
  faster.spec.primitive = whatif::Primitive::Background;
  faster.events = all(timeline, "aten::add");
  CHECK(whatif::replay(graph, {faster}).replayed_step_ms == doctest::Approx(0.071));
}

// A 1.5 µs kernel in every step: every kernel's first 1.5 µs does not grow with the batch.
TEST_CASE("whatif: batch keeps the steps' shortest kernel time of each kernel") {
  Timeline timeline = upsample_then_sync_steps(1.5);
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 4);
  whatif::Graph graph = whatif::build_graph(analysis);
  whatif::Fix bigger;
  bigger.spec.primitive = whatif::Primitive::Batch;
  bigger.spec.factor = 4;
  bigger.events = all(timeline, "conv_kernel");
  const whatif::BatchFactor batch = whatif::batch_factor(graph, bigger);
  CHECK(batch.kernel_fixed_us == doctest::Approx(1.5));
  CHECK(batch.fixed_gpu_ms == doctest::Approx(0.0015));
  CHECK(batch.gpu_ms == doctest::Approx(0.020));
  // conv_kernel: 1.5 + 4 x 18.5 = 75.5 µs, 55.5 more, and the sync waits for it.
  CHECK(whatif::replay(graph, {bigger}).replayed_step_ms == doctest::Approx(0.100 + 0.0555));
}

// The GPU work a batch-size fix scales, 20 µs per step, fills a 100 µs step at 8x (16x is past it); each
// kernel's fixed part does not grow.
TEST_CASE("whatif: batch scales the selected GPU work and stops where it fills the step") {
  Timeline timeline = upsample_then_sync_steps();
  Analysis analysis = analyze(timeline);
  whatif::Graph graph = whatif::build_graph(analysis);
  whatif::Fix bigger;
  bigger.spec.primitive = whatif::Primitive::Batch;
  bigger.spec.factor = 0;  // from the memory headroom: this trace has no [memory] events, so no larger batch
  bigger.events = all(timeline, "conv_kernel");
  whatif::BatchFactor unknown = whatif::batch_factor(graph, bigger);
  CHECK(unknown.factor == 1);
  CHECK(unknown.memory_limit == 1);
  CHECK(unknown.gpu_ms == doctest::Approx(0.020));
  // The shortest kernel takes 20 µs: no empty kernel to measure the fixed part by, so it is the 3 µs cap.
  CHECK(unknown.kernel_fixed_us == doctest::Approx(3.0));
  CHECK(unknown.fixed_gpu_ms == doctest::Approx(0.003));
  bigger.spec.factor = 4;  // given: each kernel takes 3 + 4 x 17 = 71 µs and the sync waits for it
  CHECK(whatif::batch_factor(graph, bigger).factor == 4);
  CHECK(whatif::replay(graph, {bigger}).replayed_step_ms == doctest::Approx(0.100 + 0.051));
  // The memory headroom: 2 GiB held, 3 GiB at the peak, 80 GiB: (0.8 * 80 - 2) / 1 = 62 -> 32x.
  whatif::MemoryUse use{2LL << 30, 3LL << 30, 80LL << 30};
  CHECK(whatif::batch_headroom(use, 0.8) == 32);
  CHECK(whatif::batch_headroom(use, 0.05) == 2);  // 4 GiB: 2 + 2 * 1 fits, 2 + 4 * 1 does not
  CHECK(whatif::batch_headroom(whatif::MemoryUse{}, 0.8) == 1);
}

TEST_CASE("whatif: a GPU gap before an op no traced call launched is charged to the host, not to the op") {
  // No step markers: the window is one step, from the first GPU op to the end of the last. Twice: a 50 µs
  // copy that no call in the trace launched, then 800 µs later (nothing traced explains the wait) a
  // 20 µs kernel, also unlaunched; the second copy starts 130 µs after the first kernel ends.
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  trace.cpu_op("aten::empty", 0, 5);
  for (int k = 0; k < 2; ++k) {
    const double s = 1000 + 1000.0 * k;
    trace.memcpy("HtoD", "Pinned", "Device", s, 50, 1 << 20, trace.next_correlation());
    trace.kernel(k == 0 ? "add_kernel" : "mul_kernel", s + 850, 20, trace.next_correlation());
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 1);
  whatif::ReplayResult result = whatif::replay(whatif::build_graph(analysis));
  REQUIRE(result.steady_steps == 1);
  CHECK(result.replayed_step_ms == doctest::Approx(1.870));
  // The copies' 100 µs and the kernels' 40 µs are theirs; the 1,730 µs between them are gaps nothing in
  // the trace caused: host, not compute or copies.
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Copy)] == doctest::Approx(0.100));
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Compute)] == doctest::Approx(0.040));
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Host)] == doctest::Approx(1.730));
  REQUIRE(!result.critical_top.empty());
  CHECK(result.critical_top.front().name == "(GPU gap, no traced launch)");
  CHECK(result.critical_top.front().category == whatif::Category::Host);
  CHECK(result.critical_top.front().ms_per_step == doctest::Approx(1.730));
}

TEST_CASE("whatif: steps cut at GPU ops while the host waits: the GPU sets the critical path") {
  // No step markers and no CPU ops: six 300 µs GEMMs launched 10 µs apart (the trace does not link the
  // launches to them, as in some ROCm traces), then one cudaDeviceSynchronize until the last ends. Steps
  // are inferred from the kernel sequence, cut at each GEMM's start: the host's instant there lies inside
  // the wait, and its period ties the GPU's.
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int k = 0; k < 6; ++k) {
    trace.runtime("cudaLaunchKernel", 1002 + 10.0 * k, 5, trace.next_correlation());
    trace.kernel("gemm_kernel", 1010 + 300.0 * k, 300, trace.next_correlation());  // no link to its launch
  }
  trace.runtime("cudaDeviceSynchronize", 1062, 1750, trace.next_correlation());  // ends at 2812: 2 µs after
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 6);
  REQUIRE(analysis.step_source == StepSource::Inferred);
  whatif::ReplayResult result = whatif::replay(whatif::build_graph(analysis));
  REQUIRE(result.steady_steps > 0);
  CHECK(result.replayed_step_ms == doctest::Approx(0.300));
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Compute)] == doctest::Approx(0.300));
  CHECK(result.critical_ms[static_cast<size_t>(whatif::Category::Sync)] == doctest::Approx(0.0));
  REQUIRE(!result.critical_top.empty());
  CHECK(result.critical_top.front().name == "gemm_kernel");
}

TEST_CASE("whatif: an Intel GPU queue's finish is a host wait: a faster kernel shortens the step") {
  // three_steps() with Unified Runtime calls: urEnqueueKernelLaunch queues the kernel (xpu_runtime, by
  // correlation), urQueueFinish waits for it.
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "Intel(R) Data Center GPU Max 1550", 8, 0, 64LL << 30);
  for (int k = 0; k < 3; ++k) {
    const double s = 1000 + 100.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 100);
    trace.cpu_op("aten::mm", s + 4, 7);
    const int64_t correlation = trace.next_correlation();
    trace.complete("xpu_runtime", "urEnqueueKernelLaunch", s + 5, 5, "4242", "1",
                   "\"correlation\": " + std::to_string(correlation));
    trace.kernel("gemm_kernel", s + 10, 60, correlation);
    trace.complete("xpu_runtime", "urQueueFinish", s + 15, 57, "4242", "1",
                   "\"correlation\": " + std::to_string(trace.next_correlation()));
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  whatif::Graph graph = whatif::build_graph(analysis);
  const EventIndex finish = find(timeline, "urQueueFinish");
  REQUIRE(graph.node_of_event[finish] != kNone);
  CHECK(graph.nodes[graph.node_of_event[finish]].kind == whatif::NodeKind::HostWait);
  CHECK(whatif::replay(graph).replayed_step_ms == doctest::Approx(0.1));
  whatif::Fix faster;
  faster.spec.primitive = whatif::Primitive::Scale;
  faster.spec.factor = 0.5;
  faster.events = all(timeline, "gemm_kernel");
  CHECK(whatif::replay(graph, {faster}).replayed_step_ms == doctest::Approx(0.070));
}
