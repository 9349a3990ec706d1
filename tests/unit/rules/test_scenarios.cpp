// The scenario traces of testdata/scenarios (written by make_scenarios.py, described in its README): every
// training-loop mistake is flagged by its rule with the expected site, and its fixed twin and the well-tuned
// loop by nothing at all. The traces are part of the project, so these tests never skip.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "test_scenarios_support.h"

namespace ptadvise {
namespace {

using testing::CheckedTrace;
using testing::joined;

std::string scenario(const std::string& name) {
  return std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/" + name + ".json.gz";
}

CheckedTrace check_scenario(const std::string& name,
                            const std::map<std::string, std::map<std::string, double>>& thresholds = {}) {
  return testing::check_trace(scenario(name), thresholds);
}

// The one finding of `rule` on `trace`; fails the test when there is not exactly one.
const Finding& only(const CheckedTrace& trace, const std::string& rule) {
  REQUIRE_MESSAGE(testing::shipped(rule), rule << " is not in rules.d");
  auto found = trace.of_rule(rule);
  REQUIRE_MESSAGE(found.size() == 1, rule << " reported " << found.size() << " findings");
  return *found.front();
}

void check_source(const Finding& finding, const std::string& file, int line) {
  REQUIRE_MESSAGE(finding.site.source.has_value(), finding.rule_id << " has no source location");
  CHECK(finding.site.source->file == file);
  CHECK(finding.site.source->line == line);
}

struct Expected {
  const char* trace;
  std::multiset<std::string> rules;
};

// Every trace with the exact set of rules that fire on it. Fixed twins and the well-tuned loop: none.
const std::vector<Expected>& expected_findings() {
  static const std::vector<Expected> expected = {
      {"01_loss_weight_every_step", {"PTA101"}},
      {"02_assert_on_gpu_tensor", {"PTA102"}},
      {"03_python_list_index", {"PTA101"}},
      {"04_loss_module_built_in_step", {"PTA101", "PTA111"}},
      {"05_dataloader_num_workers_0", {"PTA106"}},
      {"06_pageable_batch_copy", {"PTA107"}},
      {"07_zero_grad_without_set_to_none", {"PTA109"}},
      {"08_fp32_on_v100", {"PTA105"}},
      {"09_blocking_batch_copy", {}},  // 4 µs of a 4.2 ms GPU-bound step: below the noise floor
      {"10_single_tensor_optimizer", {"PTA110"}},
      {"11_conv_bias_before_batchnorm", {"PTA113"}},
      // empty_cache(): the allocator calls, the host work of empty_cache() itself while the GPU idles (the
      // driver calls inside it are allocator-churn's), and the idle gaps no finding explains.
      {"12_empty_cache_every_step", {"PTA104", "PTA114", "PTA121"}},
      {"13_cuda_launch_blocking", {"PTA115"}},
      {"14_fp32_matmul_without_tf32", {"PTA116"}},
      // one site in forward (with a Python stack), one in backward (autograd thread, none)
      {"15_half_dims_not_multiple_of_8", {"PTA117", "PTA117"}},
      // batch 8: tiny kernels, the idle that is left, and the unused memory that allows a larger batch
      // The idle PTA118 would claim is the tiny-kernel storm's: nothing left to save, below the noise floor.
      {"16_small_batch_memory_underused", {"PTA103", "PTA104", "PTA118"}},
      {"17_gpu_memory_nearly_full", {"PTA119"}},
      // step 0's lazy module loading leaves launch-bound idle that only the catch-all explains
      {"18_warmup_in_profiled_window", {"PTA120"}},  // the warm-up step's idle is in no per-step figure
      // the checks' syncs are charged to anomaly mode; gaps outside the checked backward nodes stay unexplained
      {"19_detect_anomaly", {"PTA104", "PTA112"}},
      // preprocessing on the training thread after loss.item(): the idle is the CPU work's, not the sync's
      // (the 0.34 ms per step of untraced Python between the data loader and the copy is no finding's)
      {"20_cpu_preprocess_in_step", {"PTA121"}},
      {"well_tuned", {}},
  };
  return expected;
}

TEST_CASE("scenarios: each mistake is flagged by exactly its rules, each fix and the well-tuned loop by none") {
  for (const auto& [name, rules] : expected_findings()) {
    const std::string trace = name;
    CAPTURE(trace);
    CheckedTrace broken = check_scenario(trace);
    CHECK_MESSAGE(testing::shipped_only(broken.rule_ids()) == testing::shipped_only(rules), trace << ": got " << joined(broken.rule_ids()));
    if (trace == "well_tuned") continue;
    CheckedTrace fixed = check_scenario(trace + "_fixed");
    CHECK_MESSAGE(testing::shipped_only(fixed.rule_ids()).empty(), trace << "_fixed: got " << joined(fixed.rule_ids()));
  }
}

TEST_CASE("scenario 01: a loss weight made with torch.Tensor(...).cuda() every step is an H2D copy at train.py:18") {
  if (!testing::shipped("PTA101")) return;
  CheckedTrace trace = check_scenario("01_loss_weight_every_step");
  const Finding& copy = only(trace, "PTA101");
  CHECK(copy.site.op == "aten::copy_");
  CHECK(copy.site.kernel == "Memcpy HtoD (Pageable -> Device)");
  CHECK(copy.count_per_step == doctest::Approx(1.0));
  CHECK(copy.steps_present_pct == doctest::Approx(100.0));
  check_source(copy, "train.py", 18);
}

TEST_CASE("scenario 02: assert on a GPU tensor syncs through aten::is_nonzero at train.py:18") {
  if (!testing::first_wave_reviewed()) return;
  CheckedTrace trace = check_scenario("02_assert_on_gpu_tensor");
  const Finding& sync = only(trace, "PTA102");
  CHECK(sync.site.op == "aten::is_nonzero");
  CHECK(sync.count_per_step == doctest::Approx(1.0));
  check_source(sync, "train.py", 18);
}

TEST_CASE("scenario 03: indexing with range(n) copies the index to the GPU every step") {
  if (!testing::shipped("PTA101")) return;
  CheckedTrace trace = check_scenario("03_python_list_index");
  const Finding& copy = only(trace, "PTA101");
  CHECK(copy.site.op == "aten::copy_");
  CHECK(copy.count_per_step == doctest::Approx(1.0));
  check_source(copy, "train.py", 18);
}

TEST_CASE("scenario 04: nn.NLLLoss built in forward: the constructor and its weight copy, both at train.py:18") {
  if (!testing::shipped("PTA101")) return;
  CheckedTrace trace = check_scenario("04_loss_module_built_in_step");
  const Finding& built = only(trace, "PTA111");
  CHECK(built.site.op == "torch/nn/modules/module.py(474): __init__");
  CHECK(built.count_per_step == doctest::Approx(1.0));
  CHECK(built.steps_present_pct == doctest::Approx(100.0));
  check_source(built, "train.py", 18);
  check_source(only(trace, "PTA101"), "train.py", 18);
}

TEST_CASE("scenario 05: num_workers=0 stalls the GPU in the data loader") {
  if (!testing::shipped("PTA106")) return;
  CheckedTrace trace = check_scenario("05_dataloader_num_workers_0");
  const Finding& stall = only(trace, "PTA106");
  CHECK(stall.site.op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  CHECK(stall.count_per_step == doctest::Approx(1.0));
  // The generator's loader takes ≈ 7.8 ms of the step; the GPU idles for ≈ 5.5 ms of it.
  CHECK(stall.time_ms_per_step == doctest::Approx(7.77).epsilon(0.01));
  CHECK(stall.saving_ms_per_step == doctest::Approx(5.49).epsilon(0.01));
}

TEST_CASE("scenario 06: the batch copied from pageable memory, 2.23 ms of copies per step") {
  CheckedTrace trace = check_scenario("06_pageable_batch_copy");
  const Finding& pageable = only(trace, "PTA107");
  CHECK(pageable.site.op == "aten::copy_");
  CHECK(pageable.site.kernel == "Memcpy HtoD (Pageable -> Device)");
  CHECK(pageable.count_per_step == doctest::Approx(2.0));  // images and targets
  CHECK(pageable.time_ms_per_step == doctest::Approx(2.2304).epsilon(0.001));
  // The saving is the ledger's claim (the copies' 70% that pinned memory takes off); replayed with pinned
  // copies (at the link bandwidth of an A100's PCIe 4.0) that no longer block the host, the step goes
  // 5.836 -> 4.016 ms; the fixed twin measures 4.089 ms.
  CHECK(pageable.saving_basis == "ledger+replay");
  CHECK(pageable.saving_ms_per_step == doctest::Approx(1.561).epsilon(0.005));
  CHECK(pageable.predicted_step_ms == doctest::Approx(4.016).epsilon(0.005));
  check_source(pageable, "train.py", 60);
}

TEST_CASE("scenario 07: zero_grad(set_to_none=False) zeroes the 14 gradients every step") {
  CheckedTrace trace = check_scenario("07_zero_grad_without_set_to_none");
  const Finding& zeroing = only(trace, "PTA109");
  CHECK(zeroing.site.op == "aten::zero_");
  CHECK(zeroing.count_per_step == doctest::Approx(14.0));
  CHECK(zeroing.saving_ms_per_step > 0.0);
}

TEST_CASE("scenario 08: fp32 convolutions and matmuls on a V100 leave the Tensor Cores idle") {
  if (!testing::shipped("PTA105")) return;
  CheckedTrace trace = check_scenario("08_fp32_on_v100");
  const Finding& precision = only(trace, "PTA105");
  CHECK(precision.saving_ms_per_step > 0.0);
  CHECK(check_scenario("08_fp32_on_v100_fixed").of_rule("PTA105").empty());
}

TEST_CASE("scenario 09: the batch copied without non_blocking waits for the stream") {
  // In this GPU-bound loop the wait costs 4 µs per step: the default noise floor keeps it out of reports.
  CHECK(check_scenario("09_blocking_batch_copy").of_rule("PTA108").empty());
  CheckedTrace trace = check_scenario("09_blocking_batch_copy", {{"PTA108", {{"min_saving_ms", 0}, {"min_saving_pct", 0}}}});
  const Finding& blocking = only(trace, "PTA108");
  CHECK(blocking.site.op == "aten::copy_");
  CHECK(blocking.count_per_step == doctest::Approx(1.0));  // the 12.6 MB images; the 512 B targets are not a batch
  check_source(blocking, "train.py", 60);
}

TEST_CASE("scenario 10: SGD(foreach=False) runs 3 elementwise ops for each of the 14 parameter tensors") {
  CheckedTrace trace = check_scenario("10_single_tensor_optimizer");
  const Finding& optimizer = only(trace, "PTA110");
  CHECK(optimizer.count_per_step == doctest::Approx(42.0));
}

TEST_CASE("scenario 11: four biased convolutions feed batch norms in Net.forward (train.py:41)") {
  CheckedTrace trace = check_scenario("11_conv_bias_before_batchnorm");
  const Finding& bias = only(trace, "PTA113");
  CHECK(bias.site.op == "aten::convolution");
  CHECK(bias.count_per_step == doctest::Approx(4.0));
  check_source(bias, "train.py", 41);
}

TEST_CASE("scenario 12: empty_cache() makes the allocator call the driver 13 times per steady-state step") {
  CheckedTrace trace = check_scenario("12_empty_cache_every_step");
  const Finding& churn = only(trace, "PTA114");
  // 6 cudaFree + 7 cudaMalloc in each of the 7 steps after the first, averaged over the 8 recorded steps.
  CHECK(churn.count_per_step == doctest::Approx(13.0 * 7 / 8));
  CHECK(churn.steps_present_pct == doctest::Approx(87.5));
}

TEST_CASE("scenario 13: with CUDA_LAUNCH_BLOCKING every one of the 59 launches per step waits for its kernel") {
  CheckedTrace trace = check_scenario("13_cuda_launch_blocking");
  const Finding& blocking = only(trace, "PTA115");
  CHECK(blocking.count_per_step == doctest::Approx(59.0));
  // The fixed twin runs the same loop in 4.08 ms instead of 6.20 ms per step.
  CHECK(blocking.saving_ms_per_step == doctest::Approx(2.07).epsilon(0.02));
}

TEST_CASE("scenario 14: fp32 matmuls on an A100 run on sgemm kernels, not TF32") {
  CheckedTrace trace = check_scenario("14_fp32_matmul_without_tf32");
  const Finding& fp32 = only(trace, "PTA116");
  CHECK(fp32.count_per_step == doctest::Approx(6.0));  // 2 linears × (forward + 2 backward GEMMs)
  CHECK(fp32.time_ms_per_step == doctest::Approx(1.30).epsilon(0.01));
  // The ledger claims what TF32 takes off the GEMMs (0.78 ms); the loop waits for its loader workers while
  // the GPU runs, a wait that follows the GPU (docs/WHATIF.md, "The graph"), so the replay of the fix
  // shortens the step by 0.773 ms, and the saving is that.
  CHECK(fp32.saving_basis == "ledger+replay");
  CHECK(fp32.saving_method.find("The step ledger gives it 0.780 ms per step") != std::string::npos);
  CHECK(fp32.saving_ms_per_step == doctest::Approx(0.773).epsilon(0.01));
  CHECK(fp32.saving_method.find("below the rule's noise floor") == std::string::npos);
}

TEST_CASE("scenario 15: a 1001-class bf16 head: the forward addmm at train.py:41 and a backward mm") {
  CheckedTrace trace = check_scenario("15_half_dims_not_multiple_of_8");
  auto unaligned = trace.of_rule("PTA117");
  REQUIRE(unaligned.size() == 2);
  std::set<std::string> ops;
  for (const Finding* finding : unaligned) {
    ops.insert(finding->site.op);
    if (finding->site.op == "aten::addmm") {
      CHECK(finding->count_per_step == doctest::Approx(1.0));
      check_source(*finding, "train.py", 41);
    } else {
      CHECK(finding->count_per_step == doctest::Approx(1.0));  // grad_input = grad @ W: K = 1001
      CHECK_FALSE(finding->site.source.has_value());  // backward runs on the autograd thread, no Python stack
    }
  }
  CHECK(ops == std::set<std::string>{"aten::addmm", "aten::mm"});
}

TEST_CASE("scenario 16: batch 8 leaves the GPU idle 62% of the step with 93% of its memory free") {
  // Reported with the default floor: it claims no time (the storm has that idle) and predicts per sample.
  CheckedTrace trace = check_scenario("16_small_batch_memory_underused", {});
  const Finding& underused = only(trace, "PTA118");
  CHECK(underused.saving_ms_per_step == 0.0);
  CHECK(underused.message.find("busy 32.3% of the step") != std::string::npos);
  CHECK(underused.message.find("2.77 GiB") != std::string::npos);
  if (testing::shipped("PTA103")) CHECK(only(trace, "PTA103").saving_ms_per_step > 0.5);
}

TEST_CASE("scenario 17: 39.2 GB of a 42.3 GB A100 allocated at the peak") {
  CheckedTrace trace = check_scenario("17_gpu_memory_nearly_full");
  const Finding& full = only(trace, "PTA119");
  CHECK(full.message.find("36.5 GiB (0.93 of the GPU's 39.4 GiB)") != std::string::npos);
  CHECK(full.saving_ms_per_step == 0.0);
}

TEST_CASE("scenario 18: the first recorded step is the warm-up step") {
  CheckedTrace trace = check_scenario("18_warmup_in_profiled_window");
  const Finding& warmup = only(trace, "PTA120");
  CHECK(warmup.message.find("profiled window: 1, taking 12.6 ms in all, 3.07 times the steady period of 4.09 ms") !=
        std::string::npos);
  CHECK(warmup.saving_ms_per_step == 0.0);
}

TEST_CASE("scenario 19: anomaly detection checks 24 gradients per step and explains the GPU's idle time") {
  CheckedTrace trace = check_scenario("19_detect_anomaly");
  const Finding& anomaly = only(trace, "PTA112");
  CHECK(anomaly.count_per_step == doctest::Approx(24.0));
  CHECK(anomaly.steps_present_pct == doctest::Approx(100.0));
  CHECK(anomaly.saving_ms_per_step > 1.0);
}

TEST_CASE("scenario 20: preprocessing after loss.item() is host-bound CPU work at pipeline.py:129, not the sync's") {
  CheckedTrace trace = check_scenario("20_cpu_preprocess_in_step");
  const Finding& host = only(trace, "PTA121");
  check_source(host, "pipeline.py", 129);
  // 2.68 ms of CPU ops per step (upsample 1.25, copy 0.64, div 0.41, sub 0.38) plus Python, 6.92 ms period;
  // the GPU still runs the previous step's tail during part of it.
  CHECK(host.saving_ms_per_step == doctest::Approx(2.3846).epsilon(0.002));
  CHECK(host.message.find("aten::upsample_bilinear2d 1.11 ms/step, aten::copy_ 0.56 ms/step") != std::string::npos);
  // The sync's own share: the GPU drained while the host waited, then the refill stopped at the data
  // loader and the preprocessing, so it stays far below the preprocessing's 2.7 ms.
  CheckedTrace all = check_scenario("20_cpu_preprocess_in_step", {{"PTA102", {{"min_saving_ms", 0}, {"min_saving_pct", 0}, {"min_idle_pct", 0}}}});
  for (const Finding* sync : all.of_rule("PTA102")) CHECK(sync->saving_ms_per_step < 0.05);
}

TEST_CASE("CPU-only recordings (PyTorch 1.13, legacy format): loader stall and anomaly mode are found") {
  CheckedTrace workers0 = check_scenario("cpu_only_num_workers_0");
  CHECK_MESSAGE(testing::shipped_only(workers0.rule_ids()) == testing::shipped_only({"PTA106"}),
                joined(workers0.rule_ids()));
  CheckedTrace anomaly = check_scenario("cpu_only_detect_anomaly");
  CHECK_MESSAGE(testing::shipped_only(anomaly.rule_ids()) == testing::shipped_only({"PTA106", "PTA112"}),
                joined(anomaly.rule_ids()));
  if (anomaly.of_rule("PTA112").size() == 1) {
    const Finding& checks = only(anomaly, "PTA112");
    CHECK(checks.count_per_step == doctest::Approx(16.0));  // 16 gradients checked per backward
    CHECK(checks.saving_ms_per_step > 0.0);                 // host time: there is no GPU to be idle
  }
  CheckedTrace preloaded = check_scenario("cpu_only_preloaded");
  CHECK_MESSAGE(testing::shipped_only(preloaded.rule_ids()).empty(), joined(preloaded.rule_ids()));
}

}  // namespace
}  // namespace ptadvise
