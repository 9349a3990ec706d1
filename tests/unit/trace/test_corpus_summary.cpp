// summarize() on real traces of ../shared/traces against figures computed independently by
// tests/tools/summary_expectations.py (plain Python json/gzip re-implementation of the definitions):
//   python3 tests/tools/summary_expectations.py ../shared/traces/<file> ...
// Also checks the ledger invariant on each trace. Skips when ../shared is absent.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <variant>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "test_analysis_helpers.h"

using namespace ptadvise;

namespace {

struct Expected {
  const char* file;
  const char* why;  // what this trace covers
  size_t steps;
  const char* source;
  double median_ms;
  double gpu_busy_pct;
  double kernels_per_step;
  double tiny_kernel_pct;
};

// Output of summary_expectations.py, copied as numbers.
const Expected kExpected[] = {
    {"kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
     "2021 object form, capitalised categories, ProfilerStep as Operator, string tids", 6, "ProfilerStep",
     165.981500, 70.363344, 1594.000000, 63.906315},
    {"HTA__tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
     "absolute µs with ns decimals beyond double precision, multi-stream", 5, "ProfilerStep", 184.937291,
     97.711942, 870.000000, 38.988506},
    {"HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
     "AMD ROCm, float µs, backward thread, truncated last step", 2, "ProfilerStep", 4.668682, 1.589887, 7.000000,
     71.428571},
    {"HTA__tests__data__nccl_parser_config__nccl_data.json.gz", "NCCL communication kernels on side streams", 3,
     "ProfilerStep", 222.442191, 23.605199, 900.000000, 42.925926},
    {"TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
     "relative float µs with baseTimeNanoseconds, python_function stacks", 1, "ProfilerStep", 4.426114, 6.991167,
     60.000000, 96.666667},
    {"HTA__tests__data__critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
     "no ProfilerStep: two iterations inferred from the kernel sequence", 2, "inferred", 2286.297000, 0.231838,
     39.000000, 20.512821},
    {"TraceLens__tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz",
     "AMD MI210, no markers, nothing repeats: the whole window", 1, "whole-window", 6.024766, 88.690947,
     562.000000, 79.003559},
};

}  // namespace

TEST_CASE("corpus: summary figures match an independent computation on real traces") {
  const std::filesystem::path traces = std::filesystem::path(PTADVISE_SHARED_DIR) / "traces";
  if (!std::filesystem::is_directory(traces)) {
    MESSAGE("skipped: " << traces.string() << " is absent (the shared traces live beside the project)");
    return;
  }
  for (const Expected& expected : kExpected) {
    const std::filesystem::path path = traces / expected.file;
    CAPTURE(expected.file);
    CAPTURE(expected.why);
    if (!std::filesystem::exists(path)) {
      MESSAGE("skipped: " << path.string() << " is absent");
      continue;
    }
    auto loaded = load_trace_file(path.string());
    REQUIRE(std::holds_alternative<Timeline>(loaded));
    const Timeline& timeline = std::get<Timeline>(loaded);
    Analysis analysis = analyze(timeline);
    Summary summary = summarize(analysis);
    CHECK(summary.step_count == expected.steps);
    CHECK(to_string(summary.step_source) == expected.source);
    CHECK(summary.median_step_ms == doctest::Approx(expected.median_ms).epsilon(1e-5));
    CHECK(summary.gpu_busy_pct == doctest::Approx(expected.gpu_busy_pct).epsilon(1e-5));
    CHECK(summary.kernels_per_step == doctest::Approx(expected.kernels_per_step).epsilon(1e-5));
    CHECK(summary.tiny_kernel_pct == doctest::Approx(expected.tiny_kernel_pct).epsilon(1e-5));
    // The ledger charges every idle ns inside the step windows exactly once.
    CHECK(analysis.total_idle_ns() == ptadvise::testing::idle_inside_windows(analysis));
  }
}
