// summarize() on real traces of ../shared/traces against figures computed independently by
// tests/tools/summary_expectations.py (plain Python json/gzip re-implementation of the definitions):
//   python3 tests/tools/summary_expectations.py ../shared/traces/<file> ...
// Also checks the ledger invariant on each trace. Skips when ../shared is absent.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <variant>

#include "corpus_traces.h"
#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "test_analysis_helpers.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

using namespace ptadvise;

namespace {

struct ExpectedSummary {
  const char* file;
  const char* why;  // what this trace covers
  size_t steps;
  const char* source;
  size_t steady;     // steps left after warm-up and a cut-short last step
  double period_ms;  // mean iteration period of the steady steps
  double median_ms;
  double gpu_busy_pct;
  double kernels_per_step;
  double tiny_kernel_pct;
};

// Output of summary_expectations.py, copied as numbers.
const ExpectedSummary kExpectedSummaries[] = {
    {"HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
     "AMD ROCm; the last ProfilerStep is cut short", 2, "ProfilerStep", 1, 9.325301, 9.325301, 1.598254,
     14.000000, 71.428571},
    {"HTA__tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
     "inferred steps; warm-up with cuDNN/allocator work", 2, "inferred", 1, 27.192000, 27.192000, 19.285084,
     39.000000, 17.948718},
    {"HTA__tests__data__critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
     "inferred steps; the benchmark's warm-up run (cudaMalloc) is left out", 2, "inferred", 1, 225.475000, 225.475000, 2.316000,
     39.000000, 20.512821},
    {"HTA__tests__data__df_index_resolver__df_index_resolver.json.gz",
     "SGD training, 5 markers", 5, "ProfilerStep", 5, 347.586200, 345.823000, 57.575916,
     3874.000000, 51.388745},
    {"HTA__tests__data__mtia_inference_trace__mtia_inference_rank_0.json.gz",
     "no markers: iterations from a repeating user range (the last range, without the gap after it, left out)",
     12, "annotations", 11, 26.208482, 26.108574, 0.000000, 0.000000, 0.000000},
    {"HTA__tests__data__nccl_parser_config__nccl_data.json.gz",
     "NCCL communication kernels on side streams", 3, "ProfilerStep", 3, 222.408653, 222.503285, 23.605199,
     900.000000, 42.925926},
    {"HTA__tests__data__negative_queue_length_values_check__rank0.json.gz",
     "FusedAdam training, 5 markers", 5, "ProfilerStep", 5, 246.087200, 216.331000, 35.670652,
     1216.000000, 87.615132},
    {"HTA__tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
     "host runs ahead of a GPU-bound step: the GPU-side period", 5, "ProfilerStep", 5, 96.098421, 95.728456, 98.359525,
     870.000000, 38.988506},
    {"HTA__tests__data__timeline_analysis__sampled_rank-0.json.gz",
     "distributed rank, Shampoo optimizer", 2, "ProfilerStep", 2, 615.144500, 615.144500, 44.514419,
     577.000000, 32.842288},
    {"HTA__tests__data__trace_compare__base__base.json.gz",
     "two markers, low GPU use", 2, "ProfilerStep", 2, 119.638500, 119.638500, 0.755982,
     3.000000, 66.666667},
    {"HTA__tests__data__with_gpu_user_annotation__step_based_trace_2543932.json.gz",
     "no markers: iterations from zero_grad ... Optimizer.step (the last ends with its step: left out)", 5,
     "annotations", 4, 1.574250, 1.557500, 3.712556, 26.000000, 100.000000},
    {"TraceLens__agent_evals__unit_tests_standalone.tar.gz__sdpa_03_short_seq_overhead.json",
     "10 repeats of one kernel (benchmark loop)", 10, "inferred", 9, 0.143476, 0.151320, 77.317211,
     1.000000, 0.000000},
    {"TraceLens__tests__traces__b200__eager_trace.json.gz",
     "B200 inference: one model call whose layers repeat (not steps): the whole window", 1, "whole-window", 1,
     84.487178, 84.487178, 13.725730, 768.000000, 76.171875},
    {"TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
     "relative float µs with baseTimeNanoseconds, python_function stacks", 1, "ProfilerStep", 1, 4.426114, 4.426114, 6.991167,
     60.000000, 96.666667},
    {"TraceLens__tests__traces__h100__google_owlv2-large-patch14-ensemble__1016001.json.gz",
     "one ProfilerStep holding 6 data-loader iterations, split", 6, "ProfilerStep", 5, 243.035118, 244.566146, 46.801783,
     866.000000, 47.944573},
    {"TraceLens__tests__traces__inference__vllm_prefilldecode_piecewise__capture_traces__graph_capture_rank_0.1773709679453551615.pt.trace.json.gz",
     "vLLM graph capture: captures repeat inside one call (not steps): the whole window", 1, "whole-window", 1,
     55.172404, 55.172404, 1.528764, 99.000000, 51.515152},
    {"TraceLens__tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz",
     "AMD MI210, no markers, nothing repeats: the whole window", 1, "whole-window", 1, 6.024766, 6.024766, 88.690947,
     562.000000, 79.003559},
    {"kineto__plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
     "resnet50 with 4 loader workers: GPU-bound steps", 6, "ProfilerStep", 6, 181.335667, 174.625000, 59.923067,
     1580.666667, 63.190637},
    {"kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
     "2021 object form, capitalised categories, ProfilerStep as Operator, string tids", 6, "ProfilerStep", 6, 158.755167, 160.133500, 70.363344,
     1594.000000, 63.906315},
};

// Replaces every `from` in `bytes` by `to` in one pass (in place, each replacement of another length would
// move the rest of a 50 MB trace); how many there were.
size_t rename(std::string& bytes, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(bytes.size());
  size_t renamed = 0, done = 0;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, done)) {
    out.append(bytes, done, at - done);
    out += to;
    done = at + from.size();
    ++renamed;
  }
  out.append(bytes, done, std::string::npos);
  bytes = std::move(out);
  return renamed;
}

}  // namespace

TEST_CASE("corpus: summary figures match an independent computation on real traces") {
  const auto traces = testing::corpus_traces();
  if (!traces) return;
  for (const ExpectedSummary& expected : kExpectedSummaries) {
    CAPTURE(expected.file);
    CAPTURE(expected.why);
    const auto timeline = testing::load_corpus_trace(*traces, expected.file);
    if (!timeline) continue;
    Analysis analysis = analyze(*timeline);
    Summary summary = summarize(analysis);
    CHECK(summary.step_count == expected.steps);
    CHECK(to_string(summary.step_source) == expected.source);
    CHECK(summary.steady_steps == expected.steady);
    // Periods agree within 1%, shares within 2 percentage points (the two sides round differently).
    CHECK(summary.step_period_ms == doctest::Approx(expected.period_ms).epsilon(0.01));
    CHECK(summary.median_step_ms == doctest::Approx(expected.median_ms).epsilon(0.01));
    CHECK(std::abs(summary.gpu_busy_pct - expected.gpu_busy_pct) <= 2.0);
    CHECK(summary.kernels_per_step == doctest::Approx(expected.kernels_per_step).epsilon(0.01));
    CHECK(std::abs(summary.tiny_kernel_pct - expected.tiny_kernel_pct) <= 2.0);
    // The ledger charges every idle ns inside the step windows exactly once.
    CHECK(analysis.total_idle_ns() == ptadvise::testing::idle_inside_windows(analysis));
  }
}

TEST_CASE("corpus: resnet50 without its ProfilerStep markers still has its 6 iterations") {
  const auto traces = testing::corpus_traces();
  if (!traces) return;
  const auto loaded = testing::load_corpus_trace(
      *traces, "kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz");
  if (!loaded) return;
  const Timeline& marked = *loaded;
  // The same bytes with every marker renamed (same length, so nothing else moves).
  std::string bytes(marked.buffer, marked.buffer_size);
  for (size_t at = bytes.find("ProfilerStep#"); at != std::string::npos; at = bytes.find("ProfilerStep#", at)) {
    bytes.replace(at, 13, "ProfilerSpan#");
  }
  auto unmarked_loaded = load_trace_bytes(bytes, "unmarked.json");
  REQUIRE(std::holds_alternative<Timeline>(unmarked_loaded));
  const Timeline& unmarked = std::get<Timeline>(unmarked_loaded);
  Analysis with_markers = analyze(marked);
  Analysis without = analyze(unmarked);
  CHECK(without.step_source == StepSource::Annotations);
  REQUIRE(without.steps.size() == 6);
  CHECK(without.step_note.find("each starts at `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` "
                               "and holds one `Optimizer.step#SGD.step`") != std::string::npos);
  // Iterations start at the batch fetch a few µs into each ProfilerStep: periods within 1%.
  CHECK(without.step_period_ns() == doctest::Approx(with_markers.step_period_ns()).epsilon(0.01));
}

TEST_CASE("corpus: a model call's layers are not steps without annotations: one nn.Module call holds them") {
  const auto traces = testing::corpus_traces();
  if (!traces) return;
  // Each trace with every annotation (ProfilerStep, execute_context_…, record_function) made a plain Python
  // frame, as the trace would be recorded without them: the layers of its one model call then run inside
  // no CPU op or annotation, only inside the model's `nn.Module` frame (with_stack). Without the frames
  // counted as calls, these were 18, 12 and 12 "steps" of one or two layers each (3.8, 0.6, 12.8 ms).
  // Then with the Python frames gone too (a category no step inference reads), as a trace recorded without
  // with_stack: nothing on the host holds the layers, but the kernels that run once before and after them
  // (embedding, head) frame them.
  struct Case {
    const char* file;
    const char* repeats;       // what the whole window's note says
    const char* repeats_bare;  // and without Python frames
    double period_ms;          // the whole window
  };
  const Case cases[] = {
      {"TraceLens__tests__traces__b200__eager_trace.json.gz",
       "repeats every 42 kernels only inside one call (nn.Module: GptOssForCausalLM_0)",
       "repeats every 42 kernels only between kernels that run once (7 before it, 4 after)", 84.487},
      {"TraceLens__tests__traces__h100__Falconsai_nsfw_image_detection__1016002.json.gz",
       "repeats every 12 kernels only inside one call (nn.Module: ViTEncoder_0)",
       "repeats every 12 kernels only between kernels that run once (7 before it, 2 after)", 7.560},
      {"TraceLens__tests__traces__h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
       "repeats every 36 kernels only inside one call (nn.Module: TimesformerEncoder_0)",
       "repeats every 36 kernels only between kernels that run once (8 before it, 1 after)", 159.992},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    const auto loaded = testing::load_corpus_trace(*traces, c.file);
    if (!loaded) continue;
    std::string bytes(loaded->buffer, loaded->buffer_size);
    REQUIRE(rename(bytes, "\"cat\": \"user_annotation\"", "\"cat\": \"python_function\"") > 0);
    for (const bool bare : {false, true}) {
      CAPTURE(bare);
      if (bare) REQUIRE(rename(bytes, "\"cat\": \"python_function\"", "\"cat\": \"python_function_x\"") > 0);
      auto plain_loaded = load_trace_bytes(bytes, "without_annotations.json");
      REQUIRE(std::holds_alternative<Timeline>(plain_loaded));
      const Analysis analysis = analyze(std::get<Timeline>(plain_loaded));
      CHECK(analysis.step_source == StepSource::WholeWindow);
      CHECK(analysis.steps.size() == 1);
      CHECK(analysis.step_note.find(bare ? c.repeats_bare : c.repeats) != std::string::npos);
      CHECK(analysis.step_period_ns() / 1e6 == doctest::Approx(c.period_ms).epsilon(0.0001));
    }
  }
  // As recorded, the b200 trace's `execute_context_…` annotation holds the same module call: the note names
  // the innermost call holding the windows.
  if (const auto recorded = testing::load_corpus_trace(*traces, cases[0].file)) {
    CHECK(analyze(*recorded).step_note.find(cases[0].repeats) != std::string::npos);
  }
}

TEST_CASE("corpus: iterations found without markers, and from the kernels alone, measure the marked period") {
  const auto traces = testing::corpus_traces();
  if (!traces) return;
  // OWLv2's pipeline runs 6 iterations per ProfilerStep; without markers, annotations or Python frames
  // the kernel sequence gives them. Each inferred step runs from its first launch to the next one's, so
  // the last one (ending with its own last launch, 112.9 ms against about 240) lacks the preprocessing
  // before the next iteration: left out, the mean is within 1.5% of the marked one (it was 215.1 ms).
  const auto loaded =
      testing::load_corpus_trace(*traces, "TraceLens__tests__traces__h100__google_owlv2-large-patch14-ensemble__1016001.json.gz");
  if (!loaded) return;
  const Analysis marked = analyze(*loaded);
  std::string bytes(loaded->buffer, loaded->buffer_size);
  REQUIRE(rename(bytes, "ProfilerStep#", "ProfilerSpan#") > 0);
  // Without the markers only, the data-loader fetches give the 6 iterations, under the Python frames that
  // with_stack wrote around every op (they were missed, and the whole window was one step of 1,078 ms).
  auto unmarked_loaded = load_trace_bytes(bytes, "unmarked.json");
  REQUIRE(std::holds_alternative<Timeline>(unmarked_loaded));
  const Analysis unmarked = analyze(std::get<Timeline>(unmarked_loaded));
  CHECK(unmarked.step_source == StepSource::Annotations);
  CHECK(unmarked.steps.size() == 6);
  CHECK(unmarked.step_period_ns() / 1e6 == doctest::Approx(242.938).epsilon(0.0001));
  CHECK(unmarked.step_period_ns() == doctest::Approx(marked.step_period_ns()).epsilon(0.001));
  REQUIRE(rename(bytes, "\"cat\": \"user_annotation\"", "\"cat\": \"user_annotation_x\"") > 0);
  REQUIRE(rename(bytes, "\"cat\": \"python_function\"", "\"cat\": \"python_function_x\"") > 0);
  auto bare_loaded = load_trace_bytes(bytes, "bare.json");
  REQUIRE(std::holds_alternative<Timeline>(bare_loaded));
  const Analysis bare = analyze(std::get<Timeline>(bare_loaded));
  CHECK(bare.step_source == StepSource::Inferred);
  REQUIRE(bare.steps.size() == 5);
  CHECK(bare.steps.back().partial);
  CHECK(bare.steady_step_count() == 4);
  CHECK(bare.step_period_ns() / 1e6 == doctest::Approx(240.597).epsilon(0.0001));
  CHECK(bare.step_period_ns() == doctest::Approx(marked.step_period_ns()).epsilon(0.015));
}

TEST_SUITE_END();
