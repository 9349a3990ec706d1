// Steps of training loops written in the ways people write them, without ProfilerStep markers or with
// markers that are not one per iteration: two optimizers, gradient accumulation, a zero_grad inside the
// user's own range, ranges in traces that write them like ops, a stub last step, a recurring long step.
#include <doctest/doctest.h>

#include <string>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

namespace {

// One batch of a GAN at `t`: the fetch (at t + fetch_at), then the discriminator's and the generator's
// zero_grad ... step, both Adam.
void gan_batch(TraceBuilder& trace, double t, double fetch_at) {
  trace.annotation(kLoader, t + fetch_at, 50);
  for (int net = 0; net < 2; ++net) {
    const double at = t + 100 + 400 * net;
    trace.annotation("Optimizer.zero_grad#Adam.zero_grad", at, 10);
    trace.cpu_op("aten::mm", at + 20, 200);
    trace.annotation("Optimizer.step#Adam.step", at + 250, 50);
  }
}

}  // namespace

TEST_CASE("steps: a loop with two optimizers (a GAN) is one iteration per batch, not per optimizer step") {
  // Per batch: fetch, then the discriminator's and the generator's zero_grad ... step, both Adam.
  TraceBuilder trace(Era::Kineto2023);
  for (int k = 0; k < 4; ++k) {
    const double t = 1000.0 * k;
    gan_batch(trace, t, 0);
  }
  trace.annotation(kLoader, 4000, 20);  // the fetch that finds the loader empty
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, kLoader), 0);
  REQUIRE(analysis.steps.size() == 4);
  CHECK(analysis.step_note == "no ProfilerStep markers; 4 iterations on thread 1: each starts at `" +
                                  std::string(kLoader) + "` and holds 2 `Optimizer.step#Adam.step`");
  CHECK(analysis.steps[0].end_ns == clock.at(1000));
  CHECK(analysis.steps[0].anchor_end_ns == clock.at(800));  // the second optimizer step's end
  CHECK(analysis.steps[3].end_ns == clock.at(4000));        // up to the fetch that ends the loop
  CHECK(analysis.steps[1].period_ns == us(1000));
}

TEST_CASE("steps: a ProfilerStep per batch of a GAN is not split at its two zero_grads") {
  // `ptadvise run` ends a step when both optimizers have stepped: one batch, one fetch, two zero_grads.
  TraceBuilder trace(Era::Kineto2023);
  for (int k = 0; k < 3; ++k) {
    const double t = 1000.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), t, 1000);
    gan_batch(trace, t, 10);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  CHECK(analysis.steps.size() == 3);
  CHECK(analysis.step_note == "3 ProfilerStep markers on thread 1");
}

TEST_CASE("steps: an anchor after the last optimizer step opens no iteration") {
  // `for batch in loader: zero_grad ... step`: the fetch after the last batch raises StopIteration.
  TraceBuilder trace(Era::Kineto2023);
  for (int k = 0; k < 3; ++k) {
    const double t = 1000.0 * k;
    trace.annotation(kLoader, t, 50);
    trace.annotation("Optimizer.zero_grad#SGD.zero_grad", t + 100, 10);
    trace.cpu_op("aten::mm", t + 120, 500);
    trace.annotation("Optimizer.step#SGD.step", t + 700, 50);
  }
  trace.annotation(kLoader, 3000, 30);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 3);
  CHECK(analysis.step_note.find("3 iterations on thread 1") != std::string::npos);
}

TEST_CASE("steps: ProfilerSteps of gradient accumulation (one optimizer step, four batches) stay whole") {
  // prof.step() after each optimizer step; four fetches per step. Split into its fetches, a step became four
  // micro-batches; only iterations that each hold an optimizer step are iterations.
  auto accumulating = [](bool markers) {
    TraceBuilder trace(Era::Kineto2023);
    for (int s = 0; s < 3; ++s) {
      const double t = 4000.0 * s;
      if (markers) trace.annotation("ProfilerStep#" + std::to_string(s + 1), t, 4000);
      for (int micro = 0; micro < 4; ++micro) {
        trace.annotation(kLoader, t + 1000 * micro, 50);
        trace.cpu_op("aten::mm", t + 1000 * micro + 100, 500);
      }
      trace.annotation("Optimizer.step#SGD.step", t + 3700, 100);
      trace.annotation("Optimizer.zero_grad#SGD.zero_grad", t + 3850, 10);
    }
    return trace;
  };
  TraceBuilder trace = accumulating(true);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 3);
  CHECK(analysis.step_note == "3 ProfilerStep markers on thread 1");
  CHECK(analysis.steps[1].period_ns == us(4000));
  // Without markers the same loop is cut by its optimizer steps: one iteration per four batches.
  TraceBuilder bare = accumulating(false);
  Timeline bare_timeline = bare.load();
  Analysis bare_analysis = analyze(bare_timeline);
  REQUIRE(bare_analysis.steps.size() == 3);
  CHECK(bare_analysis.step_note.find("each ends with `Optimizer.step#SGD.step`") != std::string::npos);
}

TEST_CASE("steps: the user's range around each iteration wins over a zero_grad inside it") {
  // record_function("train_step") > forward, "backward" (zero_grad inside), "optim" (the optimizer step).
  TraceBuilder trace(Era::Kineto2023);
  for (int k = 0; k < 4; ++k) {
    const double t = 1000.0 * k;
    trace.annotation("train_step", t, 900);
    trace.annotation("forward", t + 10, 300);
    trace.cpu_op("aten::mm", t + 20, 280);
    trace.annotation("backward", t + 320, 400);
    trace.annotation("Optimizer.zero_grad#RMSprop.zero_grad", t + 330, 10);
    trace.cpu_op("aten::mm", t + 350, 350);
    trace.annotation("optim", t + 730, 160);
    trace.annotation("Optimizer.step#RMSprop.step", t + 740, 140);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "train_step"), 0);
  REQUIRE(analysis.steps.size() == 4);
  CHECK(analysis.step_note == "no ProfilerStep markers; 4 iterations on thread 1: each is one `train_step` range "
                              "and holds one `Optimizer.step#RMSprop.step`");
  check_step_bounds(analysis, clock, 0, 0, 900);
  CHECK(analysis.step_of(find_event(timeline, "aten::mm", 0)) == 0);  // each forward in its own iteration
  CHECK(analysis.step_of(find_event(timeline, "aten::mm", 6)) == 3);
}

TEST_CASE("steps: a range numbered by the loop (record_function(f\"step_{i}\")) is one range") {
  // Each iteration in its own `step_<i>` range, zero_grad inside it: the numbered ranges are the iterations,
  // as the same name repeated would be; the first is not a fragment before the first zero_grad.
  auto loop = [](const std::vector<int>& numbers) {
    TraceBuilder trace(Era::Kineto2023);
    for (size_t k = 0; k < numbers.size(); ++k) {
      const double t = 1000.0 * static_cast<double>(k);
      trace.annotation("step_" + std::to_string(numbers[k]), t, 900);
      trace.cpu_op("aten::mm", t + 20, 280);
      trace.annotation("Optimizer.zero_grad#SGD.zero_grad", t + 330, 10);
      trace.cpu_op("aten::mm", t + 350, 350);
      trace.annotation("Optimizer.step#SGD.step", t + 740, 140);
    }
    return trace.load();
  };
  Timeline timeline = loop({7, 8, 9, 10, 11});
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "step_7"), 0);
  REQUIRE(analysis.steps.size() == 5);
  CHECK(analysis.step_note == "no ProfilerStep markers; 5 iterations on thread 1: each is one `step_<N>` range "
                              "and holds one `Optimizer.step#SGD.step`");
  check_step_bounds(analysis, clock, 0, 0, 900);
  check_step_bounds(analysis, clock, 4, 4000, 4900);
  CHECK(analysis.step_of(find_event(timeline, "aten::mm", 0)) == 0);
  // Numbers that do not grow with time are not a loop's counter: the ranges stay apart, and the
  // iterations come from the zero_grads.
  Timeline shuffled = loop({3, 1, 4, 0, 2});
  Analysis shuffled_analysis = analyze(shuffled);
  CHECK(shuffled_analysis.step_note.find("range") == std::string::npos);
  CHECK(shuffled_analysis.step_note.find("`Optimizer.zero_grad#SGD.zero_grad`") != std::string::npos);
}

TEST_CASE("steps: in traces that write ranges like ops, a top-level name without a namespace is a range") {
  // The legacy profiler writes record_function ranges and TorchScript calls (`forward`) as ops without a
  // category: 5 jit-traced forwards, nothing else repeating, are 5 iterations, not one whole window.
  for (Era era : {Era::Legacy, Era::Kineto2020}) {
    CAPTURE(static_cast<int>(era));
    TraceBuilder trace(era);
    for (int k = 0; k < 5; ++k) {
      const double t = 1000.0 * k;
      trace.cpu_op("forward", t, 900);
      trace.cpu_op("aten::linear", t + 10, 800);
      trace.cpu_op("aten::addmm", t + 20, 700);
    }
    Timeline timeline = trace.load();
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steps.size() == 5);
    CHECK(analysis.step_note == "no ProfilerStep markers; 5 iterations on thread 1: each is one `forward` range");
  }
  // An operator repeating at the top (aten::mm of a benchmark loop) is no range.
  TraceBuilder ops(Era::Legacy);
  for (int k = 0; k < 5; ++k) ops.cpu_op("aten::mm", 1000.0 * k, 900);
  Timeline ops_timeline = ops.load();
  CHECK(analyze(ops_timeline).step_source == StepSource::WholeWindow);
}

TEST_CASE("steps: a stub last ProfilerStep is left out even with only one step before it") {
  // schedule(..., repeat=0): the profiler opens one more step just before it stops (14 us, one op).
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#6", 0, 18860);
  for (int k = 0; k < 40; ++k) trace.cpu_op("aten::mm", 10 + 400.0 * k, 350);
  trace.annotation("ProfilerStep#7", 18860, 14);
  trace.cpu_op("aten::empty", 18862, 5);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 2);
  CHECK(analysis.steps[1].partial);
  CHECK(analysis.steady_step_count() == 1);
  CHECK(analysis.step_period_ns() == doctest::Approx(us(18860)));
  // A last step with a tenth of the events but most of the time is no stub: compared with one step, kept.
  TraceBuilder slow(Era::Kineto2023);
  slow.annotation("ProfilerStep#1", 0, 18860);
  for (int k = 0; k < 40; ++k) slow.cpu_op("aten::mm", 10 + 400.0 * k, 350);
  slow.annotation("ProfilerStep#2", 18860, 15000);
  slow.cpu_op("aten::empty", 18862, 14000);
  Timeline slow_timeline = slow.load();
  CHECK(analyze(slow_timeline).steady_step_count() == 2);
}

TEST_CASE("steps: a long first step is no warm-up when as long a step comes back after steady ones") {
  // A loader that falls behind now and then: 44, 9, 24, 5, 40 ms. The fifth, after steps at the steady
  // pace, is 91% of the first: such lengths are the loop's, not a warm-up's.
  auto loop = [](std::initializer_list<double> periods_ms) {
    TraceBuilder trace(Era::Kineto2023);
    double t = 0;
    int s = 0;
    for (double ms : periods_ms) {
      trace.annotation("ProfilerStep#" + std::to_string(++s), t, ms * 1000);
      trace.annotation(kLoader, t + 10, ms * 1000 - 3000);
      trace.cpu_op("aten::mm", t + ms * 1000 - 2900, 2800);
      t += ms * 1000;
    }
    trace.annotation("ProfilerStep#" + std::to_string(++s), t, 3000);  // so that the fifth is not the last
    trace.annotation(kLoader, t + 10, 100);
    trace.cpu_op("aten::mm", t + 200, 2700);
    return trace;
  };
  TraceBuilder recurring = loop({44, 9, 24, 5, 40});
  Timeline recurring_timeline = recurring.load();
  Analysis recurring_analysis = analyze(recurring_timeline);
  CHECK(recurring_analysis.warmup_step_count() == 0);
  // A warm-up that fades (44, 20, 18, 5, 5): the long steps come before any steady one.
  TraceBuilder fading = loop({44, 20, 18, 5, 5});
  Timeline fading_timeline = fading.load();
  Analysis fading_analysis = analyze(fading_timeline);
  CHECK(fading_analysis.warmup_step_count() == 3);
}

TEST_CASE("steps: a first iteration that profiling started inside is left out, not taken for a step") {
  // prof.__enter__() between a forward and its backward: cut after each optimizer step, the first
  // "iteration" holds that backward (`fragment_ops` ops in `fragment_us`) and step only.
  auto started_inside = [](int fragment_ops, double fragment_us) {
    TraceBuilder trace(Era::Kineto2023);
    for (int op = 0; op < fragment_ops; ++op) {
      trace.cpu_op("aten::mm", op * fragment_us / fragment_ops, fragment_us / fragment_ops - 1);
    }
    trace.annotation("Optimizer.step#SGD.step", 250, 50);
    for (int k = 0; k < 4; ++k) {
      const double t = 300 + 1000.0 * k;
      for (int op = 0; op < 6; ++op) trace.cpu_op("aten::mm", t + 10 + 100 * op, 90);
      trace.annotation("Optimizer.step#SGD.step", t + 900, 100);
    }
    return trace;
  };
  TraceBuilder trace = started_inside(1, 200);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 5);
  CHECK(analysis.steps[0].partial);
  CHECK_FALSE(analysis.steps[0].warmup);
  CHECK(analysis.steady_step_count() == 4);
  CHECK(analysis.step_period_ns() == doctest::Approx(us(1000)));
  CHECK(analysis.step_note.find("; the first (2 events in 0.300 ms, against a median of 7 in 1.000 ms) began "
                                "before profiling did: left out") != std::string::npos);
  // A backward and a step hold most of an iteration's events; the fragment is still short.
  TraceBuilder backward = started_inside(5, 50);
  Timeline backward_timeline = backward.load();
  Analysis backward_analysis = analyze(backward_timeline);
  CHECK(backward_analysis.steps[0].partial);
  CHECK(backward_analysis.steady_step_count() == 4);
}
