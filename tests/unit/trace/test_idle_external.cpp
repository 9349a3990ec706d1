// Idle the traced program cannot give back: graph capture, external waits, and the notes that name them
// (docs/ANALYSIS.md, "The idle ledger").
#include <doctest/doctest.h>

#include <string>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

namespace {

bool any_note_contains(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& note : notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("ledger: graph-capture — the GPU idles while the host records a CUDA graph") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.launch("k", 0, 1, 0, 100);
  trace.runtime("cudaStreamBeginCapture", 150, 5, trace.next_correlation());
  trace.cpu_op("aten::mm", 160, 400);  // launches into the capture: recorded, never run
  trace.runtime("cudaLaunchKernel", 170, 5, trace.next_correlation());
  trace.runtime("cudaStreamEndCapture", 600, 5, trace.next_correlation());  // ends 605
  trace.cpu_op("aten::add", 700, 100);
  trace.launch("k2", 900, 5, 910, 90);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  // Gap 100..910: 150..605 is the capture (whatever runs inside it); aten::add after it is host work.
  CHECK(analysis.idle_ns(IdleCause::GraphCapture) == us(455));
  CHECK(analysis.idle_ns(IdleCause::CpuWork) == us(105));  // aten::add and the launch of k2
  CHECK(analysis.idle_ns(IdleCause::Untraced) == us(250));
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
  const std::vector<std::string> notes = unexplained_idle_notes(summarize(analysis));
  CHECK(any_note_contains(notes, "records CUDA/HIP graphs"));
  CHECK(any_note_contains(notes, "records no event"));  // 250 us of 1000: over 5%
}

TEST_CASE("ledger: external-wait — the host blocks in a copy behind a kernel the GPU holds back") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.launch("k1", 0, 1, 0, 100);
  trace.launch("held", 10, 5, 800, 100);  // queued at 15, starts at 800
  trace.cpu_op("aten::copy_", 100, 815);  // ends 915
  const int64_t copy = trace.next_correlation();
  trace.runtime("hipMemcpyWithStream", 110, 800, copy);  // ends 910, after its copy
  trace.memcpy("DtoH", "Device", "Pageable", 900, 5, 4, copy);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  // Gap 100..800: 10 us in the op before the call, then the call waits behind `held`, not on the host.
  // Gap 905..1000: the call returns after its own copy (5 us of sync), the op ends (5 us), then nothing.
  CHECK(analysis.idle_ns(IdleCause::ExternalWait) == us(690));
  CHECK(analysis.idle_ns(IdleCause::Sync) == us(5));
  CHECK(analysis.idle_ns(IdleCause::CpuWork) == us(15));
  CHECK(any_note_contains(unexplained_idle_notes(summarize(analysis)), "work queued or awaited"));
}

TEST_CASE("ledger: a sync whose queued kernel starts right after it returns is a sync") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.launch("k1", 0, 1, 0, 500);
  trace.launch("k2", 10, 5, 500, 100);  // runs back to back: no gap
  trace.cpu_op("aten::item", 20, 600);
  trace.runtime("cudaStreamSynchronize", 30, 580, trace.next_correlation());  // ends 610, k2 ends 600
  trace.launch("k3", 700, 5, 710, 290);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  // Gap 600..710: the host returns from the sync at 610 (10 us of sync), then refills.
  CHECK(analysis.idle_ns(IdleCause::Sync) == us(10));
  CHECK(analysis.idle_ns(IdleCause::ExternalWait) == 0);
}

TEST_CASE("ledger: external-wait — a long synchronize during which no traced GPU work completes") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 5000);
  trace.launch("k", 0, 1, 0, 100);
  trace.runtime("cudaDeviceSynchronize", 200, 3000, trace.next_correlation());  // 3 ms, nothing ends in it
  trace.launch("k2", 3300, 5, 3400, 1600);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  CHECK(analysis.idle_ns(IdleCause::ExternalWait) == us(3000));
  CHECK(analysis.idle_ns(IdleCause::Sync) == 0);
  CHECK(to_string(IdleCause::ExternalWait) == "external-wait");
  CHECK(to_string(IdleCause::GraphCapture) == "graph-capture");
}

TEST_CASE("steps: a whole-window step is timed from its first GPU op; a lone step ends with its last event") {
  SUBCASE("whole window") {
    TraceBuilder trace(Era::Kineto2023);
    trace.cpu_op("setup", 0, 400);  // before any GPU work: the window's opening edge
    trace.launch("k1", 400, 5, 410, 90);
    trace.launch("k2", 420, 5, 500, 100);  // ends 600
    trace.cpu_op("teardown", 700, 300);
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steps.size() == 1);
    REQUIRE(analysis.step_source == StepSource::WholeWindow);
    CHECK(analysis.steps[0].period_ns == us(190));
    CHECK(analysis.total_idle_ns() == 0);
  }
  SUBCASE("a ProfilerStep closed long after its last event") {
    TraceBuilder trace(Era::Kineto2023);
    trace.annotation("ProfilerStep#1", 0, 100000);
    trace.cpu_op("aten::add", 10, 50);
    trace.launch("k", 20, 5, 30, 40);  // ends 70
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steps.size() == 1);
    CHECK(analysis.steps[0].period_ns == us(70));
  }
}

TEST_CASE("ledger: warm-up — a first launch that loads its kernel's code, an allocation one step cannot show recurring") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 10000);
  trace.launch("k", 0, 1, 0, 100);
  trace.cpu_op("aten::relu", 200, 2100);
  trace.launch("first_relu", 210, 2000, 2300, 100);  // 2 ms in cudaLaunchKernel: code loading
  trace.cpu_op("aten::empty", 2500, 3000);
  trace.runtime("cudaMalloc", 2510, 2900, trace.next_correlation());  // 2.9 ms: the allocator growing, once
  trace.launch("k2", 5600, 5, 5700, 4300);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  // Gap 100..2300: 100 untraced, 10 in aten::relu, 2000 in the long launch (warm-up), 90 in aten::relu.
  // Gap 2400..5700: 2900 in the cudaMalloc (warm-up), the rest aten::empty's host work and the launch.
  CHECK(analysis.idle_ns(IdleCause::WarmUp) == us(2000 + 2900));
  CHECK(analysis.idle_ns(IdleCause::CpuWork) == us(10 + 90 + 10 + 90 + 5));  // in aten::relu, aten::empty, the launch
  CHECK(to_string(IdleCause::WarmUp) == "warm-up");
  // 4.9 of the 10 ms step: warm-up inside a steady step, named in the notes.
  CHECK(analysis.steady_state);
  const std::vector<std::string> notes = unexplained_idle_notes(summarize(analysis));
  CHECK(any_note_contains(notes, "one-off work"));
  CHECK_FALSE(any_note_contains(notes, "no steady step"));
}

// Three steps, each allocating 2.9 ms in aten::empty; `frees`: each step also gives memory back.
Timeline allocating_steps(bool frees) {
  TraceBuilder trace(Era::Kineto2023);
  for (int s = 0; s < 3; ++s) {
    const int64_t t = s * 10000;
    trace.annotation("ProfilerStep#" + std::to_string(s + 1), t, 10000);
    trace.launch("k", t, 1, t, 100);
    trace.cpu_op("aten::empty", t + 500, 3000);
    if (frees) trace.runtime("cudaFree", t + 501, 8, trace.next_correlation());  // empty_cache, say
    trace.runtime("cudaMalloc", t + 510, 2900, trace.next_correlation());
    trace.launch("k2", t + 3600, 5, t + 3700, 6000);
  }
  return trace.load();
}

TEST_CASE("ledger: allocations and frees in every steady step are the allocator churning: host work, not warm-up") {
  Timeline timeline = allocating_steps(/*frees=*/true);
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 3);
  CHECK(analysis.idle_ns(IdleCause::WarmUp) == 0);
  CHECK(analysis.idle_ns(IdleCause::CpuWork) >= 3 * us(2900));
  CHECK(analysis.steady_state);
}

TEST_CASE("ledger: allocations in every step that nothing frees are growth (a workspace per new stream): warm-up") {
  Timeline timeline = allocating_steps(/*frees=*/false);
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_step_count() == 3);
  CHECK(analysis.idle_ns(IdleCause::WarmUp) == 3 * us(2900));
  CHECK(analysis.idle_ns(IdleCause::CpuWork) < us(1000));
}

TEST_CASE("ledger: no steady step when one-off work fills half the steps or more") {
  auto window = [](int64_t first_launch_us) {
    TraceBuilder trace(Era::Kineto2023);
    trace.annotation("ProfilerStep#1", 0, 10000);
    trace.launch("k", 0, 1, 0, 100);
    trace.cpu_op("aten::relu", 200, first_launch_us + 100);
    trace.launch("first_relu", 210, first_launch_us, 300 + first_launch_us, 100);  // code loading
    trace.launch("k2", 500 + first_launch_us, 5, 600 + first_launch_us, 9400 - first_launch_us);
    return trace.load();
  };
  SUBCASE("warm-up fills 5 of 10 ms: no steady state, and the notes say why") {
    Timeline timeline = window(5000);
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.idle_ns(IdleCause::WarmUp) == us(5000));
    CHECK_FALSE(analysis.steady_state);
    CHECK(analysis.steady_state_note.find("the GPU idles 50% of them") != std::string::npos);
    CHECK(any_note_contains(unexplained_idle_notes(summarize(analysis)), "no steady step"));
  }
  SUBCASE("4.9 of 10 ms: a steady step with warm-up in it") {
    Timeline timeline = window(4900);
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.idle_ns(IdleCause::WarmUp) == us(4900));
    CHECK(analysis.steady_state);
    CHECK(analysis.steady_state_note.empty());
  }
}

TEST_CASE("notes: GPU work the host queued or awaited, with no GPU activity in the trace, is said to be missing") {
  // Launches and copies with no kernel or copy recorded: the GPU's activity was not recorded.
  TraceBuilder launched(Era::Kineto2023);
  launched.cpu_op("aten::mm", 0, 100);
  launched.runtime("cudaLaunchKernel", 10, 5, launched.next_correlation());
  launched.runtime("cudaMemcpyAsync", 20, 5, launched.next_correlation());
  launched.runtime("cudaGetDeviceCount", 30, 1, launched.next_correlation());  // queues nothing
  Timeline queued = launched.load();
  CHECK(missing_gpu_activity_note(queued) ==
        "the host queued GPU work 2 times (kernel launches, copies, memsets) but the trace holds no kernel, copy or "
        "memset: the GPU's activity was not recorded (ProfilerActivity.CUDA left out of `activities`, or the "
        "profiler could not start CUPTI/roctracer or lost its buffers); the rules that need GPU activity did not "
        "run (see the coverage line)");

  // Only a wait, on a GPU the trace lists: work queued before profiling, or not recorded.
  TraceBuilder waited(Era::Kineto2023);
  waited.device(0, "NVIDIA A100", 8, 0, int64_t{40} << 30);
  waited.cpu_op("aten::item", 0, 3000);
  waited.runtime("cudaDeviceSynchronize", 10, 2500, waited.next_correlation());
  Timeline blocked = waited.load();
  const auto note = missing_gpu_activity_note(blocked);
  REQUIRE(note);
  CHECK(note->find("the host waited 2.5 ms in synchronising calls on the 1 GPU the trace lists, which holds no "
                   "kernel, copy or memset: the work was queued before profiling started, or the GPU's activity") == 0);

  // Under 1 ms of waiting, no GPU listed, or any GPU activity at all: nothing to say.
  TraceBuilder short_wait(Era::Kineto2023);
  short_wait.device(0, "NVIDIA A100", 8, 0, int64_t{40} << 30);
  short_wait.runtime("cudaDeviceSynchronize", 10, 900, short_wait.next_correlation());
  Timeline brief = short_wait.load();
  CHECK_FALSE(missing_gpu_activity_note(brief));
  TraceBuilder no_device(Era::Kineto2023);
  no_device.runtime("cudaDeviceSynchronize", 10, 2500, no_device.next_correlation());
  Timeline unlisted = no_device.load();
  CHECK_FALSE(missing_gpu_activity_note(unlisted));
  TraceBuilder with_kernel(Era::Kineto2023);
  with_kernel.launch("k", 0, 5, 10, 100);
  with_kernel.runtime("cudaLaunchKernel", 200, 5, with_kernel.next_correlation());
  Timeline recorded = with_kernel.load();
  CHECK_FALSE(missing_gpu_activity_note(recorded));

  // The legacy autograd profiler without use_cuda=True: CPU ops only, among them cuDNN's, which run on a GPU.
  TraceBuilder legacy(Era::Legacy);
  legacy.cpu_op("aten::conv2d", 0, 300);
  legacy.cpu_op("aten::cudnn_convolution", 10, 200);
  legacy.cpu_op("aten::cudnn_batch_norm", 220, 50);
  legacy.cpu_op("aten::relu", 280, 10);
  Timeline cpu_side = legacy.load();
  CHECK(missing_gpu_activity_note(cpu_side) ==
        "the program ran 2 cuDNN/MIOpen ops (such as aten::cudnn_convolution), which run only on a GPU, but the "
        "trace holds no kernel, copy or memset: the GPU's activity was not recorded (the legacy autograd profiler "
        "without use_cuda=True, ProfilerActivity.CUDA left out of `activities`, or a profiler that could not start "
        "CUPTI/roctracer); the rules that need GPU activity did not run (see the coverage line)");
  TraceBuilder cpu_only(Era::Legacy);  // a CPU model: nothing says a GPU ran
  cpu_only.cpu_op("aten::conv2d", 0, 300);
  cpu_only.cpu_op("aten::mkldnn_convolution", 10, 200);
  Timeline on_cpu = cpu_only.load();
  CHECK_FALSE(missing_gpu_activity_note(on_cpu));
  // An LSTM on the CPU (PyTorch 1.13's own trace): it asks whether cuDNN could take its input; nothing ran on a GPU.
  TraceBuilder cpu_lstm(Era::Legacy);
  cpu_lstm.cpu_op("aten::lstm", 0, 300);
  cpu_lstm.cpu_op("aten::cudnn_is_acceptable", 5, 1);
  cpu_lstm.cpu_op("aten::linear", 10, 200);
  Timeline lstm_on_cpu = cpu_lstm.load();
  CHECK_FALSE(missing_gpu_activity_note(lstm_on_cpu));

  // CUPTI's range profiler: counters per kernel range, no activity.
  TraceBuilder ranges(Era::Kineto2023);
  ranges.runtime("cudaLaunchKernel", 10, 5, ranges.next_correlation());
  ranges.complete("cuda_profiler_range", "gemm", 20, 50, "0", "0", "\"kineto.sm__throughput.avg.pct\": 50");
  Timeline counters = ranges.load();
  CHECK(missing_gpu_activity_note(counters) ==
        "the trace holds 1 CUPTI range-profiler range (performance counters per kernel) and no kernel, copy or "
        "memset: the GPU's activity was not recorded beside the counters; the rules that need GPU activity did not "
        "run (see the coverage line)");
}
