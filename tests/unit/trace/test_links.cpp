// The link pass: per-track order, CPU nesting with rounding overhang, launches by correlation in every era.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

TEST_CASE("links: launch and nesting by correlation in every format era") {
  for (Era era : {Era::Kineto2020, Era::Kineto2021, Era::Kineto2022, Era::Kineto2023, Era::RelativeFloatUs,
                  Era::RelativeStringUs}) {
    CAPTURE(static_cast<int>(era));
    TraceBuilder trace(era);
    trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
    trace.cpu_op("aten::mm", 100, 50, "\"External id\": 7");
    trace.launch("gemm_kernel", 110, 5, 200, 10);
    trace.cpu_op("aten::add", 160, 10, "\"External id\": 8");
    Timeline timeline = trace.load();
    REQUIRE(timeline.events.size() > 0);
    const EventIndex op = find_event(timeline, "aten::mm");
    const EventIndex call = find_event(timeline, "cudaLaunchKernel");
    const EventIndex kernel = find_event(timeline, "gemm_kernel");
    REQUIRE(op != kNone);
    REQUIRE(call != kNone);
    REQUIRE(kernel != kNone);
    CHECK(timeline.events.launch[kernel] == call);
    CHECK(timeline.events.launch[call] == kernel);
    CHECK(timeline.events.parent[call] == op);
    CHECK(timeline.events.parent[op] == kNone);
    CHECK(timeline.events.parent[find_event(timeline, "aten::add")] == kNone);
    CHECK(timeline.events.parent[kernel] == kNone);  // GPU tracks have no nesting

    Analysis analysis = analyze(timeline);
    CHECK(analysis.cpu_op_of(kernel) == op);
    CHECK(analysis.cpu_op_of(call) == op);
    CHECK(analysis.cpu_op_of(op) == op);

    // Each track's events are ordered by start, longer first on ties.
    for (const auto& list : timeline.track_events) {
      for (size_t k = 1; k < list.size(); ++k) {
        const int64_t a = timeline.events.ts_ns[list[k - 1]], b = timeline.events.ts_ns[list[k]];
        CHECK(a <= b);
        if (a == b) CHECK(timeline.events.dur_ns[list[k - 1]] >= timeline.events.dur_ns[list[k]]);
      }
    }
  }
}

TEST_CASE("links: a child overhanging its parent by up to 1 us is nested and clamped; more is not") {
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("parent", 100, 10);     // ends 110
  trace.cpu_op("overhang", 105, 6);    // ends 111: rounding, still inside
  trace.cpu_op("sibling", 112, 3);     // after the parent
  trace.cpu_op("outer", 200, 10);      // ends 210
  trace.cpu_op("too_long", 205, 7);    // ends 212: not a child
  trace.cpu_op("same_start_long", 300, 20);
  trace.cpu_op("same_start_short", 300, 5);
  Timeline timeline = trace.load();
  const auto& events = timeline.events;
  const EventIndex parent = find_event(timeline, "parent");
  const EventIndex overhang = find_event(timeline, "overhang");
  CHECK(events.parent[overhang] == parent);
  CHECK(events.dur_ns[overhang] == us(5));  // clamped to the parent's end
  CHECK(events.parent[find_event(timeline, "sibling")] == kNone);
  CHECK(events.parent[find_event(timeline, "too_long")] == kNone);
  CHECK(events.dur_ns[find_event(timeline, "too_long")] == us(7));
  CHECK(events.parent[find_event(timeline, "same_start_short")] == find_event(timeline, "same_start_long"));
  CHECK(events.parent[find_event(timeline, "same_start_long")] == kNone);
}

TEST_CASE("links: External id ties a launch on another thread, or a GPU op without launch, to its CPU op") {
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("aten::linear", 100, 50, "\"External id\": 42", 1);
  // The runtime call sits on thread 2, outside any op there, and names the op by External id.
  trace.runtime("cudaLaunchKernel", 120, 5, 501, 2, "\"External id\": 42");
  trace.kernel("addmm_kernel", 130, 10, 501);
  // A kernel whose launch was not recorded, carrying the op's External id.
  trace.kernel("orphan_kernel", 150, 10, 999, 0, 7, "\"External id\": 42");
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex op = find_event(timeline, "aten::linear");
  const EventIndex call = find_event(timeline, "cudaLaunchKernel");
  const EventIndex kernel = find_event(timeline, "addmm_kernel");
  const EventIndex orphan = find_event(timeline, "orphan_kernel");
  CHECK(timeline.events.parent[call] == kNone);
  CHECK(timeline.events.launch[kernel] == call);
  CHECK(analysis.cpu_op_of(call) == op);
  CHECK(analysis.cpu_op_of(kernel) == op);
  CHECK(timeline.events.launch[orphan] == kNone);
  CHECK(analysis.cpu_op_of(orphan) == op);
}

TEST_CASE("links: ROCm traces without correlation ids link a call and its GPU op by their shared External id") {
  // The roctracer-era layout: runtime calls and kernels carry only "External id", numbered apart from the
  // CPU ops' (so an op can have the same number as another op's launch), kernels on pid 2 / tid 0.
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("aten::mm", 100, 50, "\"External id\": 1");
  trace.complete("cuda_runtime", "hipGetDevicePropertiesR0600", 104, 1, "4242", "1", "\"External id\": 1");
  trace.complete("cuda_runtime", "hipExtModuleLaunchKernel", 110, 5, "4242", "1",
                 "\"External id\": 2, \"stream\": \"0x0\", \"grid dim\": [4352, 37, 1]");
  trace.cpu_op("aten::mm", 160, 50, "\"External id\": 2");
  trace.complete("cuda_runtime", "hipExtModuleLaunchKernel", 170, 5, "4242", "1", "\"External id\": 4");
  trace.complete("kernel", "Cijk_gemm", 120, 300, "2", "0", "\"External id\": 2");
  trace.complete("kernel", "Cijk_gemm", 420, 300, "2", "0", "\"External id\": 4");
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex first_op = find_event(timeline, "aten::mm"), second_op = find_event(timeline, "aten::mm", 1);
  const EventIndex first_call = find_event(timeline, "hipExtModuleLaunchKernel");
  const EventIndex second_call = find_event(timeline, "hipExtModuleLaunchKernel", 1);
  const EventIndex first_kernel = find_event(timeline, "Cijk_gemm"), second_kernel = find_event(timeline, "Cijk_gemm", 1);
  REQUIRE(first_op != kNone);
  REQUIRE(second_op != kNone);
  REQUIRE(first_call != kNone);
  REQUIRE(second_call != kNone);
  REQUIRE(first_kernel != kNone);
  REQUIRE(second_kernel != kNone);
  CHECK(timeline.events.launch[first_kernel] == first_call);
  CHECK(timeline.events.launch[second_kernel] == second_call);
  CHECK(timeline.events.launch[first_call] == first_kernel);
  CHECK(timeline.events.launch[find_event(timeline, "hipGetDevicePropertiesR0600")] == kNone);
  // The op is the launch's, not the op that happens to share the kernel's number.
  CHECK(analysis.cpu_op_of(first_kernel) == first_op);
  CHECK(analysis.cpu_op_of(second_kernel) == second_op);
}

TEST_CASE("links: without correlation ids, calls that share their CPU op's External id link no GPU op") {
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("aten::conv2d", 100, 50, "\"External id\": 9");
  trace.complete("cuda_runtime", "cudaLaunchKernel", 110, 5, "4242", "1", "\"External id\": 9");
  trace.complete("cuda_runtime", "cudaLaunchKernel", 120, 5, "4242", "1", "\"External id\": 9");
  trace.complete("kernel", "im2col_kernel", 130, 10, "0", "7", "\"External id\": 9");
  trace.complete("kernel", "gemm_kernel", 140, 10, "0", "7", "\"External id\": 9");
  Timeline timeline = trace.load();
  REQUIRE(find_event(timeline, "gemm_kernel") != kNone);
  CHECK(timeline.events.launch[find_event(timeline, "im2col_kernel")] == kNone);
  CHECK(timeline.events.launch[find_event(timeline, "gemm_kernel")] == kNone);
}

TEST_CASE("links: with correlation ids, a shared External id never links a call to a GPU op") {
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("aten::mm", 100, 50, "\"External id\": 9");
  trace.runtime("cudaLaunchKernel", 110, 5, 501, 1, "\"External id\": 9");
  trace.kernel("gemm_kernel", 120, 10, 777, 0, 7, "\"External id\": 9");  // its launch was not recorded
  Timeline timeline = trace.load();
  CHECK(timeline.events.launch[find_event(timeline, "gemm_kernel")] == kNone);
}

TEST_CASE("links: Intel GPU (XPU) traces link their Level Zero / UR calls to the GPU ops by correlation") {
  // Kineto's XPU plugin: calls in "xpu_runtime", kernels on the device's SYCL queue, both with "correlation".
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("aten::addmm", 100, 50, "\"External id\": 3");
  trace.complete("xpu_runtime", "urEnqueueKernelLaunch", 110, 6, "4242", "1", "\"correlation\": 77");
  trace.complete("kernel", "gemm_kernel", 130, 40, "0", "2",
                 "\"correlation\": 77, \"device\": 0, \"sycl queue\": 2, \"External id\": 3");
  Timeline timeline = trace.load();
  const EventIndex call = find_event(timeline, "urEnqueueKernelLaunch");
  const EventIndex kernel = find_event(timeline, "gemm_kernel");
  REQUIRE(call != kNone);
  REQUIRE(kernel != kNone);
  CHECK(timeline.events.kind[call] == EventKind::Runtime);
  CHECK(timeline.events.launch[kernel] == call);
  CHECK(timeline.events.launch[call] == kernel);
  CHECK(timeline.events.parent[call] == find_event(timeline, "aten::addmm"));
}

TEST_CASE("links: graph kernels without a per-kernel launch stay unlinked; sync records link to their call") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000);
  const int64_t graph = trace.next_correlation();
  trace.runtime("cudaGraphLaunch", 10, 20, graph);
  trace.kernel("graph_node_kernel", 40, 10, graph + 5000);  // correlation of no recorded call
  const int64_t sync = trace.next_correlation();
  trace.runtime("cudaStreamSynchronize", 60, 100, sync);
  trace.sync("Stream Sync", 60, 100, sync);
  Timeline timeline = trace.load();
  const EventIndex graph_kernel = find_event(timeline, "graph_node_kernel");
  const EventIndex sync_call = find_event(timeline, "cudaStreamSynchronize");
  const EventIndex sync_record = find_event(timeline, "Stream Sync");
  CHECK(timeline.events.launch[graph_kernel] == kNone);
  CHECK(timeline.events.launch[find_event(timeline, "cudaGraphLaunch")] == kNone);
  CHECK(timeline.events.launch[sync_record] == sync_call);
  CHECK(timeline.events.launch[sync_call] == sync_record);
  Analysis analysis = analyze(timeline);
  CHECK(analysis.step_of(graph_kernel) == 0);  // by time, inside the step
}

TEST_CASE("op_chain lists enclosing ops and annotations outermost first, without the step marker") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#3", 0, 1000);
  trace.annotation("## forward ##", 10, 500);
  trace.cpu_op("aten::linear", 20, 100);
  trace.cpu_op("aten::addmm", 30, 50);
  trace.launch("gemm", 40, 5, 60, 10);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  auto chain = analysis.op_chain(find_event(timeline, "gemm"));
  REQUIRE(chain.size() == 3);
  CHECK(timeline.name(chain[0]) == "## forward ##");
  CHECK(timeline.name(chain[1]) == "aten::linear");
  CHECK(timeline.name(chain[2]) == "aten::addmm");
  CHECK(analysis.cpu_op_of(find_event(timeline, "gemm")) == find_event(timeline, "aten::addmm"));
}

TEST_CASE("links: tracks and launches linked on several threads come out as on one") {
  // Four CPU threads of different sizes, written as Kineto does (an op after the ops inside it), with
  // ties of start and length, rounding overhangs, and launches whose kernels land on two streams.
  TraceBuilder trace(Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int64_t tid = 1; tid <= 4; ++tid) {
    for (int op = 0; op < 40 * static_cast<int>(tid); ++op) {
      const double start = 1000.0 * op + tid;
      trace.launch("kernel_" + std::to_string(op % 5), start + 2, 3, start + 10, 4, 0, 7 + op % 2, tid);
      trace.cpu_op("aten::inner", start + 1, 5, "\"External id\": " + std::to_string(2 * op + 1), tid);
      trace.cpu_op("aten::twin", start + 1, 5, "\"External id\": " + std::to_string(2 * op + 2), tid);
      trace.cpu_op("aten::outer", start, 7.5, "", tid);
      trace.annotation("outer_annotation", start, 7.5, tid);
    }
  }
  auto load = [&](unsigned threads) {
    LoadOptions options;
    options.threads = threads;
    auto result = load_trace_bytes(trace.json(), "trace.json", options);
    REQUIRE(std::holds_alternative<Timeline>(result));
    return std::move(std::get<Timeline>(result));
  };
  const Timeline one = load(1);
  REQUIRE(one.events.size() > 1000);
  size_t nested = 0, launched = 0;
  for (EventIndex i = 0; i < one.events.size(); ++i) {
    nested += one.events.parent[i] != kNone ? 1 : 0;
    launched += one.events.launch[i] != kNone ? 1 : 0;
  }
  CHECK(nested > 1000);
  CHECK(launched > 700);
  for (unsigned threads : {2u, 3u, 8u}) {
    CAPTURE(threads);
    const Timeline many = load(threads);
    CHECK(many.track_events == one.track_events);
    CHECK(many.events.parent == one.events.parent);
    CHECK(many.events.launch == one.events.launch);
    CHECK(many.events.dur_ns == one.events.dur_ns);
  }
}

TEST_CASE("links: a track's order and nesting do not depend on the order the file wrote its events in") {
  // Nested ops with ties of start and length: written by start, by end (as Kineto wrote them until 2022:
  // an op after the ops inside it), shuffled, and by start with a few latecomers.
  struct Op {
    std::string name;
    double start, length;
    int external_id;
  };
  std::vector<Op> ops;
  for (int step = 0; step < 60; ++step) {
    const double t = 100.0 * step;
    ops.push_back({"outer_" + std::to_string(step), t, 50, 4 * step + 1});
    ops.push_back({"middle_" + std::to_string(step), t + 1, 20, 4 * step + 2});
    ops.push_back({"twin_" + std::to_string(step), t + 1, 20, 4 * step + 3});  // the same start and length
    ops.push_back({"inner_" + std::to_string(step), t + 2, 5, 4 * step + 4});
    ops.push_back({"after_" + std::to_string(step), t + 30, 10, 0});
  }
  // (name, start) of each event in track order, and of its parent.
  auto linked = [](const std::vector<Op>& written) {
    TraceBuilder trace(Era::Kineto2023);
    for (const Op& op : written) {
      trace.cpu_op(op.name, op.start, op.length,
                   op.external_id > 0 ? "\"External id\": " + std::to_string(op.external_id) : "");
    }
    Timeline timeline = trace.load();
    std::vector<std::pair<std::string, std::string>> order;
    for (const auto& track : timeline.track_events) {
      for (EventIndex i : track) {
        const EventIndex parent = timeline.events.parent[i];
        order.emplace_back(std::string(timeline.name(i)), parent == kNone ? "" : std::string(timeline.name(parent)));
      }
    }
    return order;
  };
  const auto by_start = linked(ops);
  REQUIRE(by_start.size() == ops.size());
  CHECK(by_start[0] == std::pair<std::string, std::string>{"outer_0", ""});
  CHECK(by_start[1] == std::pair<std::string, std::string>{"middle_0", "outer_0"});
  CHECK(by_start[2] == std::pair<std::string, std::string>{"twin_0", "middle_0"});  // the larger External id inside
  CHECK(by_start[3] == std::pair<std::string, std::string>{"inner_0", "twin_0"});
  CHECK(by_start[4] == std::pair<std::string, std::string>{"after_0", "outer_0"});

  std::vector<Op> by_end = ops;
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const Op& a, const Op& b) { return a.start + a.length < b.start + b.length; });
  CHECK(linked(by_end) == by_start);
  std::vector<Op> shuffled = ops;
  std::mt19937 random(7);
  std::shuffle(shuffled.begin(), shuffled.end(), random);
  CHECK(linked(shuffled) == by_start);
  std::vector<Op> latecomers = ops;
  for (size_t k = 10; k + 40 < latecomers.size(); k += 37) std::swap(latecomers[k], latecomers[k + 40]);
  CHECK(linked(latecomers) == by_start);
}
