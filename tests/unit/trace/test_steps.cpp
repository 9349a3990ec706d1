// Steps: ProfilerStep markers, the GPU extent by launch, iteration annotations, whole window, warm-up and
// cut-short steps (inference from the kernel sequence: test_step_inference.cpp).
#include <doctest/doctest.h>

#include <utility>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

TEST_CASE("steps: ProfilerStep markers give CPU extents; GPU extents follow the ops launched inside") {
  TraceBuilder trace(Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  trace.annotation("ProfilerStep#7", 1000, 100);
  trace.launch("k_a", 1010, 5, 1050, 20);
  trace.launch("k_b", 1090, 5, 1095, 60);  // runs past the CPU end of step 7, into step 8's CPU interval
  trace.annotation("ProfilerStep#8", 1100, 100);
  trace.launch("k_c", 1110, 5, 1160, 10);
  trace.cpu_op("aten::between", 1205, 2);  // between markers: no step
  trace.launch("k_late", 1210, 5, 1215, 5);  // launched after the last step
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "ProfilerStep#7"), 1000);

  CHECK(analysis.step_source == StepSource::ProfilerStep);
  CHECK(analysis.step_note == "2 ProfilerStep markers on thread 1");
  REQUIRE(analysis.steps.size() == 2);
  const Step& first = analysis.steps[0];
  CHECK(first.number == 7);
  CHECK(first.start_ns == clock.at(1000));
  CHECK(first.end_ns == clock.at(1100));
  CHECK(first.gpu_start_ns == clock.at(1050));
  CHECK(first.gpu_end_ns == clock.at(1155));
  CHECK(first.span_start() == clock.at(1000));
  CHECK(first.span_end() == clock.at(1155));
  CHECK(first.duration_ns() == us(155));
  const Step& second = analysis.steps[1];
  CHECK(second.number == 8);
  CHECK(second.gpu_start_ns == clock.at(1160));
  CHECK(second.gpu_end_ns == clock.at(1170));
  CHECK(second.duration_ns() == us(100));
  // Periods: step 7's GPU work starts 110 us before step 8's (longer than its 100 us host period); the
  // last step has no successor and takes its CPU interval.
  CHECK(first.period_ns == us(110));
  CHECK(second.period_ns == us(100));
  CHECK_FALSE(first.warmup);
  CHECK_FALSE(second.partial);
  CHECK(analysis.median_step_ns() == doctest::Approx(us(105)));
  CHECK(analysis.step_period_ns() == doctest::Approx(us(105)));

  CHECK(analysis.step_of(find_event(timeline, "k_b")) == 0);  // by its launch, not by when it ran
  CHECK(analysis.step_of(find_event(timeline, "k_c")) == 1);
  CHECK(analysis.step_of(find_event(timeline, "aten::between")) == kNone);
  CHECK(analysis.step_of(find_event(timeline, "k_late")) == kNone);
  CHECK(analysis.step_of(find_event(timeline, "cudaLaunchKernel", 1)) == 0);
  // The GPU sets the pace (median GPU-side period 110 us against 100 us on the host): windows tile time
  // from each step's first launched GPU op, the last for its period; no window is longer than its period.
  CHECK(first.period_start_ns == clock.at(1050));
  CHECK(second.period_start_ns == clock.at(1160));
  REQUIRE(analysis.step_windows.size() == 2);
  CHECK(analysis.step_windows[0].start_ns == clock.at(1050));
  CHECK(analysis.step_windows[0].end_ns == clock.at(1160));
  CHECK(analysis.step_windows[1].start_ns == clock.at(1160));
  CHECK(analysis.step_windows[1].end_ns == clock.at(1260));
}

TEST_CASE("steps: with markers on several threads, the thread with most wins, then the main thread") {
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_pid(77);
  trace.annotation("ProfilerStep#1", 0, 100, 5);
  trace.annotation("ProfilerStep#1", 0, 100, 77);  // main thread: tid == pid
  trace.annotation("ProfilerStep#2", 100, 100, 77);
  trace.annotation("ProfilerStep#2", 100, 100, 5);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 2);
  CHECK(timeline.tracks[timeline.events.track[analysis.steps[0].marker]].tid == 77);
  CHECK(analysis.step_note == "2 ProfilerStep markers on thread 77");

  TraceBuilder uneven(Era::Kineto2023);
  uneven.cpu_pid(77);
  uneven.annotation("ProfilerStep#1", 0, 100, 77);
  for (int n = 1; n <= 3; ++n) uneven.annotation("ProfilerStep#" + std::to_string(n), n * 100.0, 100, 5);
  Timeline timeline2 = uneven.load();
  Analysis analysis2 = analyze(timeline2);
  CHECK(analysis2.steps.size() == 3);
  CHECK(timeline2.tracks[timeline2.events.track[analysis2.steps[0].marker]].tid == 5);
}

TEST_CASE("steps: markers on a trace without GPU activity") {
  TraceBuilder trace(Era::Kineto2022);
  trace.annotation("ProfilerStep#1", 0, 300);
  trace.cpu_op("aten::mul", 10, 100);
  trace.annotation("ProfilerStep#2", 300, 200);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 2);
  CHECK(analysis.steps[0].gpu_start_ns == -1);
  CHECK(analysis.steps[1].duration_ns() == us(200));
  CHECK(analysis.devices.empty());
  CHECK(analysis.idle.empty());
  CHECK(analysis.step_of(find_event(timeline, "aten::mul")) == 0);
}

TEST_CASE("steps: the whole profiled window is one step when nothing repeats") {
  TraceBuilder trace(Era::Kineto2023);
  trace.cpu_op("aten::conv2d", 50, 100);
  trace.launch("conv_kernel", 60, 5, 70, 200);
  trace.launch("bn_kernel", 80, 5, 270, 30);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "aten::conv2d"), 50);
  CHECK(analysis.step_source == StepSource::WholeWindow);
  REQUIRE(analysis.steps.size() == 1);
  CHECK(analysis.steps[0].start_ns == clock.at(50));
  CHECK(analysis.steps[0].end_ns == clock.at(300));
  CHECK(analysis.steps[0].duration_ns() == us(250));
  CHECK(analysis.step_of(find_event(timeline, "bn_kernel")) == 0);
  CHECK(to_string(StepSource::WholeWindow) == "whole-window");
}

namespace {

// One training iteration as PyTorch records it: fetch a batch, zero_grad, forward kernels, optimizer step.
void iteration(TraceBuilder& trace, double t, double fetch_us, const char* loader) {
  trace.annotation(loader, t, fetch_us);
  trace.annotation("Optimizer.zero_grad#SGD.zero_grad", t + fetch_us, 10);
  trace.launch("fwd_gemm", t + fetch_us + 20, 5, t + fetch_us + 30, 50);
  trace.annotation("Optimizer.step#SGD.step", t + fetch_us + 60, 20);
  trace.launch("sgd_update", t + fetch_us + 65, 5, t + fetch_us + 85, 5);
}

}  // namespace

TEST_CASE("steps: without markers, iterations start at each data-loader fetch holding one optimizer step") {
  TraceBuilder trace(Era::Kineto2023);
  for (int k = 0; k < 4; ++k) iteration(trace, 1000.0 * k, 100, kLoader);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, kLoader), 0);
  CHECK(analysis.step_source == StepSource::Annotations);
  CHECK(to_string(analysis.step_source) == "annotations");
  REQUIRE(analysis.steps.size() == 4);
  CHECK(analysis.step_note == "no ProfilerStep markers; 4 iterations on thread 1: each starts at `" +
                                  std::string(kLoader) + "` and holds one `Optimizer.step#SGD.step`");
  CHECK(analysis.steps[0].start_ns == clock.at(0));
  CHECK(analysis.steps[0].end_ns == clock.at(1000));
  CHECK(analysis.steps[3].start_ns == clock.at(3000));
  CHECK(analysis.steps[3].end_ns == clock.at(3180));  // the last iteration ends with its optimizer step
  CHECK(analysis.steps[0].period_ns == us(1000));
  CHECK(analysis.steps[3].period_ns == us(180));  // no successor: its own CPU interval
  // That interval lacks what follows the optimizer step before the next fetch (820 us here), which every
  // other period holds: the last iteration is left out of the per-step figures.
  CHECK(analysis.steps[2].anchor_end_ns == clock.at(2180));
  CHECK(analysis.steps[3].anchor_end_ns == clock.at(3180));
  CHECK(analysis.steps[3].partial);
  CHECK(analysis.steady_step_count() == 3);
  CHECK(analysis.step_of(find_event(timeline, "sgd_update", 2)) == 2);
}

TEST_CASE("steps: the last annotation iteration is left out when the others hold time after their anchor") {
  // Two iterations: one other period is no norm, and both are kept.
  TraceBuilder two(Era::Kineto2023);
  for (int k = 0; k < 2; ++k) iteration(two, 1000.0 * k, 100, kLoader);
  Timeline two_timeline = two.load();
  Analysis two_analysis = analyze(two_timeline);
  REQUIRE(two_analysis.steps.size() == 2);
  CHECK(two_analysis.steps[1].anchor_end_ns >= 0);
  CHECK_FALSE(two_analysis.steps[1].partial);
  CHECK(two_analysis.steady_step_count() == 2);
  // Four user ranges of `length_us` a millisecond apart.
  auto ranges_of = [](double length_us) {
    TraceBuilder trace(Era::Kineto2023);
    for (int k = 0; k < 4; ++k) {
      trace.annotation("train_batch", 1000.0 * k, length_us);
      trace.launch("fwd_gemm", 1000.0 * k + 20, 5, 1000.0 * k + 30, 50);
    }
    return trace;
  };
  // Time between the ranges: the last range has none after it.
  TraceBuilder ranges = ranges_of(700);
  Timeline ranges_timeline = ranges.load();
  Analysis ranges_analysis = analyze(ranges_timeline);
  REQUIRE(ranges_analysis.steps.size() == 4);
  CHECK(ranges_analysis.steps[0].period_ns == us(1000));
  CHECK(ranges_analysis.steps[3].period_ns == us(700));
  CHECK(ranges_analysis.steps[3].partial);
  CHECK(ranges_analysis.partial_note == "the last iteration ends where its optimizer step or range does, without "
                                        "the 0.300 ms (median) that follow them in the others: left out");
  CHECK(ranges_analysis.steady_step_count() == 3);
  // Ranges that nearly tile time (4 us between ranges of 996 us: under 1% of the period): the last one's
  // period is as good as the others', and it is kept.
  TraceBuilder tiled = ranges_of(996);
  Timeline tiled_timeline = tiled.load();
  Analysis tiled_analysis = analyze(tiled_timeline);
  REQUIRE(tiled_analysis.steps.size() == 4);
  CHECK(tiled_analysis.steps[3].period_ns == us(996));
  CHECK_FALSE(tiled_analysis.steps[3].partial);
  CHECK(tiled_analysis.steady_step_count() == 4);
}

TEST_CASE("steps: with Python frames around every op (with_stack), iterations still come from annotations") {
  // `with_stack` writes the script's frames around everything: no op or annotation is at the top of its
  // thread. The iterations are found as without them (they used to be missed: the thread's stretch was
  // taken from its top-level ops only).
  auto framed_loop = [](bool ranges) {
    TraceBuilder trace(Era::Kineto2023);
    trace.python_frame("train.py(30): <module>", -10, 4200, 1, -1);
    trace.python_frame("train.py(12): train", -5, 4100, 2, 1);
    for (int k = 0; k < 4; ++k) {
      if (ranges) {  // the user's own range per batch, under the frames
        trace.annotation("train_batch", 1000.0 * k, 900);
        trace.launch("fwd_gemm", 1000.0 * k + 20, 5, 1000.0 * k + 30, 50 + 10 * k);
      } else {
        iteration(trace, 1000.0 * k, 100, kLoader);
      }
    }
    return trace;
  };
  TraceBuilder loader = framed_loop(false);
  Timeline timeline = loader.load();
  Analysis analysis = analyze(timeline);
  CHECK(analysis.step_source == StepSource::Annotations);
  CHECK(analysis.steps.size() == 4);
  CHECK(analysis.step_note == "no ProfilerStep markers; 4 iterations on thread 1: each starts at `" +
                                  std::string(kLoader) + "` and holds one `Optimizer.step#SGD.step`");
  TraceBuilder ranges = framed_loop(true);
  Timeline ranges_timeline = ranges.load();
  Analysis ranges_analysis = analyze(ranges_timeline);
  CHECK(ranges_analysis.step_source == StepSource::Annotations);
  CHECK(ranges_analysis.steps.size() == 4);
  CHECK(ranges_analysis.step_note.find("each is one `train_batch` range") != std::string::npos);
}

TEST_CASE("steps: without markers or a loader, iterations end with each optimizer step") {
  // Also in a loop written `loss.backward(); opt.step(); opt.zero_grad()`: the first zero_grad follows the
  // first step. Cut at its zero_grads, the first iteration was lost and the last held only the trailing one.
  for (bool trailing_zero_grad : {false, true}) {
    CAPTURE(trailing_zero_grad);
    TraceBuilder trace(Era::Kineto2023);
    for (int k = 0; k < 3; ++k) {
      double t = 500.0 * k;
      trace.cpu_op("aten::linear", t, 100);
      trace.launch("fwd_gemm", t + 10, 5, t + 20, 50);
      trace.annotation("Optimizer.step#Adam.step", t + 200, 50);
      if (trailing_zero_grad) trace.annotation("Optimizer.zero_grad#Adam.zero_grad", t + 260, 10);
    }
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    Clock clock(timeline, find_event(timeline, "aten::linear"), 0);
    REQUIRE(analysis.steps.size() == 3);
    CHECK(analysis.step_note == "no ProfilerStep markers; 3 iterations on thread 1: each ends with "
                                "`Optimizer.step#Adam.step`");
    check_step_bounds(analysis, clock, 0, 0, 250);
    check_step_bounds(analysis, clock, 1, 250, 750);
    check_step_bounds(analysis, clock, 2, 750, 1250);
    CHECK(analysis.step_of(find_event(timeline, "fwd_gemm", 2)) == 2);
    // Each iteration ends with its optimizer step, the last one too: all are whole.
    CHECK(analysis.steps[2].anchor_end_ns == -1);
    CHECK(analysis.steady_step_count() == 3);
  }
}

TEST_CASE("steps: a ProfilerStep holding the same number of iterations in every step is split") {
  TraceBuilder trace(Era::Kineto2023);
  for (int s = 0; s < 2; ++s) {
    trace.annotation("ProfilerStep#" + std::to_string(s + 1), 3000.0 * s, 3000);
    for (int k = 0; k < 3; ++k) iteration(trace, 3000.0 * s + 1000.0 * k, 100, kLoader);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "ProfilerStep#1"), 0);
  CHECK(analysis.step_source == StepSource::ProfilerStep);
  REQUIRE(analysis.steps.size() == 6);
  CHECK(analysis.step_note.find("2 ProfilerStep markers on thread 1; each holds 3 iterations (each starts at `") == 0);
  CHECK(analysis.step_note.find("counted as 6 steps") != std::string::npos);
  CHECK(analysis.steps[1].start_ns == clock.at(1000));
  CHECK(analysis.steps[2].end_ns == clock.at(3000));  // the last iteration closes with its ProfilerStep
  CHECK(analysis.steps[3].number == 2);               // numbered by their ProfilerStep
  CHECK(analysis.steps[3].marker == find_event(timeline, "ProfilerStep#2"));

  // Different counts per step are ambiguous: the steps stay whole.
  TraceBuilder uneven(Era::Kineto2023);
  uneven.annotation("ProfilerStep#1", 0, 3000);
  for (int k = 0; k < 3; ++k) iteration(uneven, 1000.0 * k, 100, kLoader);
  uneven.annotation("ProfilerStep#2", 3000, 3000);
  for (int k = 0; k < 2; ++k) iteration(uneven, 3000 + 1000.0 * k, 100, kLoader);
  Timeline timeline2 = uneven.load();
  CHECK(analyze(timeline2).steps.size() == 2);
}

TEST_CASE("steps: leading warm-up steps and a cut-short last step are left out of per-step figures") {
  TraceBuilder trace(Era::Kineto2023);
  // Step 1 is 3x the others; step 6 holds only the profiler's stop.
  double t = 0;
  for (int s = 1; s <= 5; ++s) {
    double length = s == 1 ? 3000 : 1000;
    trace.annotation("ProfilerStep#" + std::to_string(s), t, length);
    trace.cpu_op("aten::mm", t + 10, 50);
    trace.launch("gemm", t + 20, 5, t + 30, 400);
    trace.launch("relu", t + 40, 5, t + 430, 50);
    t += length;
  }
  trace.annotation("ProfilerStep#6", t, 20);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 6);
  CHECK(analysis.steps[0].warmup);
  CHECK_FALSE(analysis.steps[1].warmup);
  CHECK(analysis.steps[5].partial);
  CHECK(analysis.steady_step_count() == 4);
  CHECK(analysis.warmup_step_count() == 1);
  CHECK(analysis.step_period_ns() == doctest::Approx(us(1000)));
  CHECK(analysis.median_step_ns() == doctest::Approx(us(1000)));
  CHECK(analysis.warmup_note ==
        "1 leading step (3.000 ms in all, against a steady period of 1.000 ms) is warm-up, left out of the "
        "per-step figures");
  Summary summary = summarize(analysis);
  CHECK(summary.steady_steps == 4);
  CHECK(summary.last_step_partial);
  CHECK(summary.partial_note == "the last step holds less than half the events of the others (as when profiling "
                                "stops inside a step): left out");
  CHECK(summary.kernels_per_step == doctest::Approx(2.0));
  // Steady windows: 4 x 1000 us with 450 us of kernels each (gemm 400 + relu 50).
  CHECK(summary.gpu_busy_pct == doctest::Approx(45.0));
  CHECK(summary.compute_busy_pct == doctest::Approx(45.0));
  CHECK(summary.idle_pct == doctest::Approx(55.0));

  // A long first step with one-off work is warm-up even with one step after it.
  TraceBuilder two(Era::Kineto2023);
  two.annotation("ProfilerStep#1", 0, 1200);
  two.runtime("cudaMalloc", 10, 100, -1);
  two.launch("gemm", 200, 5, 210, 400);
  two.annotation("ProfilerStep#2", 1200, 1000);
  two.launch("gemm", 1210, 5, 1220, 400);
  Timeline timeline2 = two.load();
  Analysis analysis2 = analyze(timeline2);
  REQUIRE(analysis2.steps.size() == 2);
  CHECK(analysis2.steps[0].warmup);
  CHECK(analysis2.warmup_note.find("1 one-off call such as cudaMalloc/cudaFree or cuDNN autotuning") !=
        std::string::npos);
}

TEST_CASE("steps: a long first step that launches far more kernels is a prologue, not warm-up") {
  // Step 1 is 3x the others in both cases; with 3x the kernels it does more work, with the same it warms up.
  for (int kernels : {2, 6}) {
    CAPTURE(kernels);
    TraceBuilder trace(Era::Kineto2023);
    double t = 0;
    for (int s = 1; s <= 4; ++s) {
      double length = s == 1 ? 3000 : 1000;
      trace.annotation("ProfilerStep#" + std::to_string(s), t, length);
      const int count = s == 1 ? kernels : 2;
      for (int k = 0; k < count; ++k) trace.launch("k" + std::to_string(k), t + 10 + 10 * k, 5, t + 100 + 100 * k, 50);
      t += length;
    }
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steps.size() == 4);
    CHECK(analysis.steps[0].warmup == (kernels == 2));
  }
}
