// Steps: ProfilerStep markers, the GPU extent by launch, inference from the kernel sequence, whole window.
#include <doctest/doctest.h>

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
  // Windows never overlap: step 8's window starts where step 7's span ends.
  REQUIRE(analysis.step_windows.size() == 2);
  CHECK(analysis.step_windows[0].start_ns == clock.at(1000));
  CHECK(analysis.step_windows[0].end_ns == clock.at(1155));
  CHECK(analysis.step_windows[1].start_ns == clock.at(1155));
  CHECK(analysis.step_windows[1].end_ns == clock.at(1200));
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

TEST_CASE("steps: inferred from a repeating kernel sequence when there are no markers") {
  TraceBuilder trace(Era::Kineto2023);
  // A one-off warm-up kernel, then three identical steps of forward, backward and optimizer kernels.
  trace.launch("warmup_kernel", 0, 5, 10, 10);
  const char* step_kernels[] = {"fwd_gemm", "relu", "fwd_gemm", "bwd_gemm", "sgd_update"};
  double t = 100;
  for (int step = 0; step < 3; ++step) {
    for (const char* name : step_kernels) {
      trace.launch(name, t, 5, t + 10, 20);
      t += 30;
    }
    t += 100;  // the host gap between steps
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "warmup_kernel"), 10);
  CHECK(analysis.step_source == StepSource::Inferred);
  REQUIRE(analysis.steps.size() == 3);
  CHECK(analysis.step_note.find("repeats every 5 kernels") != std::string::npos);
  // Boundaries fall in the host gaps: step 0 starts at the launch of its first fwd_gemm.
  CHECK(analysis.steps[0].number == 0);
  CHECK(analysis.steps[0].start_ns == clock.at(100));
  CHECK(analysis.steps[0].end_ns == clock.at(350));
  CHECK(analysis.steps[1].start_ns == clock.at(350));
  CHECK(analysis.steps[2].start_ns == clock.at(600));
  CHECK(analysis.steps[2].end_ns == clock.at(725));  // end of the last launch call
  CHECK(analysis.steps[2].gpu_end_ns == clock.at(750));
  CHECK(analysis.step_of(find_event(timeline, "warmup_kernel")) == kNone);
  CHECK(analysis.step_of(find_event(timeline, "sgd_update", 1)) == 1);
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
