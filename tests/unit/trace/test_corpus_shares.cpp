// Compute, communication and copy shares of the steady steps on real traces of ../shared/traces, against
// the independent computation of tests/tools/summary_expectations.py (plain Python; kernel families read
// from data/kernel_families.yaml by tests/tools/kernel_families.py):
//   python3 tests/tools/summary_expectations.py ../shared/traces/<file> ...
// Skips when ../shared is absent.
#include <doctest/doctest.h>

#include <cmath>

#include "corpus_traces.h"
#include "ptadvise/analysis.h"

using namespace ptadvise;

namespace {

struct ExpectedShares {
  const char* file;
  double gpu_busy_pct, compute_busy_pct, communication_pct, copy_pct, idle_pct;
};

// Output of summary_expectations.py, copied as numbers (averages over the devices with activity).
const ExpectedShares kExpectedShares[] = {
    {"HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
     1.598254, 1.189034, 0.000000, 0.409220, 98.401746},
    {"HTA__tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
     19.285084, 19.277729, 0.000000, 0.007355, 80.714916},
    {"HTA__tests__data__df_index_resolver__df_index_resolver.json.gz",
     57.575916, 35.704890, 20.561746, 1.309280, 42.424084},
    {"HTA__tests__data__large_integer_trace__rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
     100.000000, 0.000000, 100.000000, 0.000000, 0.000000},
    {"HTA__tests__data__nccl_parser_config__nccl_data.json.gz",
     23.605199, 17.333835, 5.928946, 0.342418, 76.394801},
    {"HTA__tests__data__negative_queue_length_values_check__rank0.json.gz",
     35.670652, 17.167261, 15.077799, 3.425593, 64.329348},
    {"HTA__tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
     98.359525, 97.464140, 0.000000, 0.895385, 1.640475},
    {"HTA__tests__data__timeline_analysis__sampled_rank-0.json.gz",
     44.514419, 17.095170, 27.390556, 0.028692, 55.485581},
    {"HTA__tests__data__trace_filter__sampled_rank-1.json.gz",
     46.831364, 21.958222, 24.505467, 0.367675, 53.168636},
    {"HTA__tests__data__trace_compare__base__base.json.gz",
     0.755982, 0.192366, 0.000000, 0.563616, 99.244018},
    {"TraceLens__tests__traces__b200__eager_trace.json.gz",
     13.725730, 10.240769, 2.534705, 0.950255, 86.274270},
    {"TraceLens__tests__traces__h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
     41.416587, 40.481360, 0.000000, 0.935228, 58.583413},
    {"TraceLens__tests__traces__h100__google_owlv2-large-patch14-ensemble__1016001.json.gz",
     46.801783, 45.537693, 0.000000, 1.264089, 53.198217},
    {"TraceLens__tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
     99.762891, 99.360860, 0.000000, 0.402032, 0.237109},
    {"TraceLens__tests__traces__inference__xdit_sd_3.5__profile_trace_rank_0.json.gz",
     59.615536, 59.575732, 0.000000, 0.039805, 40.384464},
    {"TraceLens__tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz",
     89.362310, 89.362310, 0.000000, 0.000000, 10.637690},
    {"kineto__plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
     59.923067, 57.814885, 0.000000, 2.108182, 40.076933},
    {"kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
     70.363344, 68.945046, 0.000000, 1.418298, 29.636656},
};

}  // namespace

TEST_CASE("corpus: compute, communication and copy shares match an independent computation") {
  const auto traces = testing::corpus_traces();
  if (!traces) return;
  for (const ExpectedShares& expected : kExpectedShares) {
    CAPTURE(expected.file);
    const auto timeline = testing::load_corpus_trace(*traces, expected.file);
    if (!timeline) continue;
    Summary summary = summarize(analyze(*timeline));
    // Within 2 percentage points (the two sides round differently).
    CHECK(std::abs(summary.gpu_busy_pct - expected.gpu_busy_pct) <= 2.0);
    CHECK(std::abs(summary.compute_busy_pct - expected.compute_busy_pct) <= 2.0);
    CHECK(std::abs(summary.communication_pct - expected.communication_pct) <= 2.0);
    CHECK(std::abs(summary.copy_pct - expected.copy_pct) <= 2.0);
    CHECK(std::abs(summary.idle_pct - expected.idle_pct) <= 2.0);
    // The split adds up, per device and on average.
    CHECK(summary.compute_busy_pct + summary.communication_pct + summary.copy_pct + summary.idle_pct ==
          doctest::Approx(100.0).epsilon(1e-9));
    REQUIRE(summary.device_shares.size() == summary.devices.size());
    double compute = 0;
    for (const DeviceShare& share : summary.device_shares) {
      CHECK(share.compute_busy_pct + share.communication_pct + share.copy_pct + share.idle_pct ==
            doctest::Approx(100.0).epsilon(1e-9));
      compute += share.compute_busy_pct;
    }
    CHECK(compute / static_cast<double>(summary.device_shares.size()) ==
          doctest::Approx(summary.compute_busy_pct).epsilon(1e-9));
  }
}

TEST_CASE("corpus: a rank waiting in NCCL kernels is not a busy rank") {
  const auto traces = testing::corpus_traces();
  if (!traces) return;
  const auto timeline =
      testing::load_corpus_trace(*traces, "HTA__tests__data__timeline_analysis__sampled_rank-0.json.gz");
  if (!timeline) return;
  Summary summary = summarize(analyze(*timeline));
  // 44.5% "busy", of which 27.4 points are NCCL kernels: the GPU computes 17% of the step.
  CHECK(summary.gpu_busy_pct == doctest::Approx(44.51).epsilon(0.001));
  CHECK(summary.compute_busy_pct == doctest::Approx(17.10).epsilon(0.001));
  CHECK(summary.communication_pct == doctest::Approx(27.39).epsilon(0.001));
  CHECK(summary.family_ms_per_step[static_cast<size_t>(KernelFamily::Communication)] > 0);
}
