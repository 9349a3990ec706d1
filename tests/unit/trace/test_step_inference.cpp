// Steps inferred from the kernel sequence: the period, the offset, and the repeats that are parts of one
// call rather than iterations (inside one host call or nn.Module call, framed by one-off kernels).
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;
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

namespace {

// Four identical top-level layers, each kernel launched from an aten op of its own (two kernels a layer,
// or three), optionally after an embedding kernel, before a head kernel, and inside one `execute_model`
// annotation.
TraceBuilder four_layers(int kernels_per_layer, bool embedding, bool head, bool in_one_call) {
  TraceBuilder trace(Era::Kineto2023);
  if (in_one_call) trace.annotation("execute_model", 0, 1000);
  if (embedding) trace.launch("embedding", 5, 5, 20, 10);
  double t = 100;
  for (int layer = 0; layer < 4; ++layer) {
    trace.cpu_op("aten::linear", t, 40);
    trace.launch("layer_gemm", t + 5, 5, t + 20, 20);
    trace.cpu_op("aten::silu", t + 50, 40);
    trace.launch("layer_act", t + 55, 5, t + 70, 10);
    if (kernels_per_layer == 3) {
      trace.cpu_op("aten::add", t + 100, 40);
      trace.launch("layer_residual", t + 105, 5, t + 120, 10);
    }
    t += 200;
  }
  if (head) trace.launch("lm_head_gemm", t + 5, 5, t + 20, 30);
  return trace;
}

// Where a trace's steps come from and how many there are.
std::pair<StepSource, size_t> found_steps(TraceBuilder& trace) {
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  return {analysis.step_source, analysis.steps.size()};
}

// The note of a trace that is one whole-window step, after checking that it is.
std::string whole_window_note(TraceBuilder& trace) {
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  CHECK(analysis.step_source == StepSource::WholeWindow);
  CHECK(analysis.steps.size() == 1);
  return analysis.step_note;
}

// The note of a trace whose steps are inferred, after checking that they are and how many there are.
std::string inferred_note(TraceBuilder& trace, size_t steps) {
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  CHECK(analysis.step_source == StepSource::Inferred);
  CHECK(analysis.steps.size() == steps);
  return analysis.step_note;
}

}  // namespace

TEST_CASE("steps: layers repeating inside one model call are not steps") {
  // Four identical layers after an embedding: the kernel sequence repeats every 2 kernels.
  auto layers = [](bool in_one_call) { return four_layers(2, true, false, in_one_call); };
  // Inside one `execute_model` call (an inference forward) every boundary between windows lies in it.
  TraceBuilder one_call = layers(true);
  CHECK(whole_window_note(one_call).starts_with(
      "no ProfilerStep markers and no repeating iteration annotations; the kernel sequence repeats every 2 kernels "
      "only inside one call (execute_model), as the layers of a call do: the profiled window is one step;"));

  // The same layers with no call around them (an unannotated loop at the top of its thread) are steps.
  TraceBuilder loop = layers(false);
  CHECK(found_steps(loop) == std::pair{StepSource::Inferred, size_t{4}});
}

TEST_CASE("steps: layers inside one nn.Module call are not steps, even when each layer is a module call") {
  // A `with_stack` trace of one forward: the model's frame holds four layer frames, each launching two
  // kernels from top-level aten ops (no record_function anywhere). Python frames that are not module calls
  // (the script's own function) hold the whole loop and are not calls.
  auto model_calls = [](int calls, int layers_per_call) {
    TraceBuilder trace(Era::Kineto2023);
    int64_t id = 1;
    const double call_us = 100 + 200.0 * layers_per_call;
    trace.python_frame("bench.py(12): <module>", 0, 50 + call_us * calls, id++, -1);
    double t = 10;
    for (int call = 0; call < calls; ++call) {
      const int64_t model = id++;
      trace.python_frame("nn.Module: Decoder_" + std::to_string(call), t, call_us - 20, model, 1);
      trace.launch("embedding", t + 5, 5, t + 20, 10);
      double at = t + 90;
      for (int layer = 0; layer < layers_per_call; ++layer) {
        trace.python_frame("nn.Module: Layer_" + std::to_string(layer), at, 190, id++, model);
        trace.cpu_op("aten::linear", at + 5, 40);
        trace.launch("layer_gemm", at + 10, 5, at + 20, 20);
        trace.cpu_op("aten::silu", at + 55, 40);
        trace.launch("layer_act", at + 60, 5, at + 70, 10);
        at += 200;
      }
      t += call_us;
    }
    return trace;
  };
  TraceBuilder one_forward = model_calls(1, 4);
  CHECK(whole_window_note(one_forward).find("repeats every 2 kernels only inside one call (nn.Module: Decoder_0)") !=
        std::string::npos);
  // The model called four times, one layer each (a generate or benchmark loop): each call is a step.
  TraceBuilder four_forwards = model_calls(4, 1);
  CHECK(found_steps(four_forwards) == std::pair{StepSource::Inferred, size_t{4}});
  // Four calls of two layers: the period of a whole call wins; its layers are never tried as steps.
  TraceBuilder two_layer_calls = model_calls(4, 2);
  CHECK(inferred_note(two_layer_calls, 4).find("repeats every 5 kernels") != std::string::npos);
}

TEST_CASE("steps: repeats framed by kernels that run once before and after them are the layers of one call") {
  // Top-level layers of three kernels (no annotation, no Python frames: nothing on the host tells one call
  // from a loop), with an embedding before and a head after them that no window runs: one forward.
  auto framed = [](bool prologue, bool epilogue) { return four_layers(3, prologue, epilogue, false); };
  TraceBuilder both = framed(true, true);
  CHECK(whole_window_note(both).starts_with(
      "no ProfilerStep markers and no repeating iteration annotations; the kernel sequence repeats every 3 kernels "
      "only between kernels that run once (1 before it, 1 after), as the layers of one model call do (if they "
      "are iterations, call prof.step() every iteration): the profiled window is one step;"));
  // One-off work on one side only (setup before a loop, or a last kernel after it; a loop profiled mid-run
  // has parts of iterations at its edges): the repeats are steps.
  for (auto [prologue, epilogue] : {std::pair{true, false}, std::pair{false, true}, std::pair{false, false}}) {
    TraceBuilder one_side = framed(prologue, epilogue);
    CHECK(found_steps(one_side) == std::pair{StepSource::Inferred, size_t{4}});
  }
}

TEST_CASE("steps: the last step inferred from the kernel sequence, which ends with its own launches, is left out") {
  // Four iterations of 300 us: 150 us of preprocessing (no GPU work), then two ops each launching a kernel.
  // Inferred steps run from one window's first launch to the next one's, so each holds the next
  // iteration's preprocessing; the last ends with its own last launch (60 us of GPU span) and holds none.
  auto loop = [](int iterations) {
    TraceBuilder trace(Era::Kineto2023);
    for (int k = 0; k < iterations; ++k) {
      const double t = 300.0 * k;
      trace.cpu_op("preprocess", t, 150);
      trace.cpu_op("aten::linear", t + 150, 40);
      trace.launch("gemm", t + 155, 5, t + 160, 20);
      trace.cpu_op("aten::relu", t + 200, 40);
      trace.launch("act", t + 205, 5, t + 210, 10);
    }
    return trace;
  };
  for (const int iterations : {4, 2}) {
    CAPTURE(iterations);
    TraceBuilder trace = loop(iterations);
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    CHECK(analysis.step_source == StepSource::Inferred);
    REQUIRE(analysis.steps.size() == static_cast<size_t>(iterations));
    if (iterations == 4) {
      CHECK(analysis.steps.back().partial);
      CHECK(analysis.partial_note == "the last step ends with its own last launch (there is no next step to time it "
                                     "against, and it lacks the host time before one): left out");
      CHECK(analysis.steady_step_count() == 3);
      CHECK(analysis.step_period_ns() == doctest::Approx(300'000));  // was 240 us with the last one in
    } else {  // with two steps the last one stays: none would be left to measure beside the first
      CHECK_FALSE(analysis.steps.back().partial);
    }
  }
}

TEST_CASE("steps: launches nested deeper than 1,024 host calls are not looked through") {
  // 1,100 nested annotations around repeating layers (a hostile trace): the check stops at the limit and
  // takes the launches as enclosed by nothing, as an unannotated loop, instead of walking every level.
  TraceBuilder trace(Era::Kineto2023);
  for (int depth = 0; depth < 1100; ++depth) trace.annotation("nest", depth * 0.01, 2000 - depth * 0.02);
  double t = 100;
  for (int layer = 0; layer < 4; ++layer) {
    trace.launch("layer_gemm", t + 5, 5, t + 20, 20);
    trace.launch("layer_act", t + 55, 5, t + 70, 10);
    t += 200;
  }
  CHECK(found_steps(trace) == std::pair{StepSource::Inferred, size_t{4}});
}

TEST_CASE("steps: layers replayed by one CUDA-graph launch are not steps; one launch per iteration is") {
  // One cudaGraphLaunch whose graph holds four identical layers: every window lies inside the one call.
  auto graph_trace = [](int launches, int layers) {
    TraceBuilder trace(Era::Kineto2023);
    double t = 100;
    for (int launch = 0; launch < launches; ++launch) {
      const int64_t correlation = trace.next_correlation();
      trace.runtime("cudaGraphLaunch", t, 20, correlation);
      for (int layer = 0; layer < layers; ++layer) {
        trace.kernel("layer_gemm", t + 30 + 40 * layer, 20, correlation);
        trace.kernel("layer_act", t + 50 + 40 * layer, 10, correlation);
      }
      t += 100 + 40.0 * layers;
    }
    return trace;
  };
  TraceBuilder one_call = graph_trace(1, 4);
  CHECK(found_steps(one_call) == std::pair{StepSource::WholeWindow, size_t{1}});
  TraceBuilder per_iteration = graph_trace(4, 1);
  CHECK(found_steps(per_iteration) == std::pair{StepSource::Inferred, size_t{4}});
}

TEST_CASE("steps: one kernel per window: kernels of one op are one call, kernels of separate ops are steps") {
  // A multi-tensor op launching the same kernel four times repeats every kernel: those are not steps.
  auto repeats = [](bool op_per_kernel) {
    TraceBuilder trace(Era::Kineto2023);
    if (!op_per_kernel) trace.cpu_op("aten::_foreach_add_", 90, 800);
    for (int k = 0; k < 4; ++k) {
      const double t = 100 + 200.0 * k;
      if (op_per_kernel) trace.cpu_op("aten::mm", t, 50);
      trace.launch("gemm", t + 5, 5, t + 20, 20);
    }
    return trace;
  };
  TraceBuilder one_op = repeats(false);
  CHECK(found_steps(one_op) == std::pair{StepSource::WholeWindow, size_t{1}});
  TraceBuilder benchmark = repeats(true);  // a benchmark loop: one aten::mm per iteration
  CHECK(found_steps(benchmark) == std::pair{StepSource::Inferred, size_t{4}});
}

TEST_CASE("steps: calls annotated apart inside one wrapper are steps") {
  // A benchmark wraps everything in one annotation and each forward in its own (warm-up, measure): the
  // windows' boundaries lie inside the wrapper, but each window was launched from a call of its own.
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("[param|cuda]", 0, 2000);
  for (int pass = 0; pass < 2; ++pass) {
    const double t = 100 + 900.0 * pass;
    trace.annotation(pass == 0 ? "forward|warmup" : "forward|measure", t, 700);
    for (int k = 0; k < 3; ++k) {
      trace.cpu_op("aten::linear", t + 10 + 200 * k, 100);
      trace.launch(k == 2 ? "gemm_out" : "gemm", t + 20 + 200 * k, 5, t + 40 + 200 * k, 50);
    }
  }
  CHECK(inferred_note(trace, 2).find("repeats every 3 kernels") != std::string::npos);
}
