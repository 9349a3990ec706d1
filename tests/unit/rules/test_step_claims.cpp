// Every nanosecond is claimed once: on every trace of the shared corpus and every scenario, no finding
// saves more than its step and all findings of a trace together save at most one step; the step ledger's
// GPU-time bound stays within the GPU's busy time, and that within the step's window.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "corpus_traces.h"
#include "test_scenarios_support.h"

namespace ptadvise {
namespace {

using testing::CheckedTrace;

std::vector<std::string> traces_in(const std::string& directory) {
  std::vector<std::string> paths;
  if (!std::filesystem::is_directory(directory)) return paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json") || name.ends_with(".json.gz")) paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

void check_claims(const std::string& path) {
  CAPTURE(path);
  auto loaded = load_trace_file(path);
  if (std::holds_alternative<LoadError>(loaded)) return;  // the corpus's malformed samples: the loader's tests
  const Timeline& timeline = std::get<Timeline>(loaded);
  const Analysis analysis = analyze(timeline);
  const double step_ms = analysis.step_period_ns() / 1e6;
  for (uint32_t s = 0; s < analysis.step_ledger.size(); ++s) {
    const StepLedger& ledger = analysis.step_ledger[s];
    CHECK(ledger.gpu_bound_ns >= 0);
    CHECK(ledger.gpu_bound_ns <= ledger.busy_ns);
    CHECK(ledger.busy_ns <= ledger.window_ns);
    CHECK(ledger.window_ns <= analysis.steps[s].period_ns);
  }
  const std::vector<Finding> findings = evaluate(testing::shipped_rules(), analysis);
  double total = 0;
  for (const Finding& finding : findings) {
    CAPTURE(finding.rule_id);
    CHECK(finding.saving_ms_per_step >= 0);
    CHECK(finding.saving_pct <= 100.0 + 1e-9);
    total += finding.saving_ms_per_step;
  }
  CHECK(total <= step_ms * (1 + 1e-9) + 1e-9);
}

TEST_CASE("claims: no finding and no trace's findings together save more than a step (corpus)") {
  if (!testing::corpus_traces()) return;
  for (const auto& path : testing::corpus_trace_files()) check_claims(path.string());
}

TEST_CASE("claims: no finding and no trace's findings together save more than a step (scenarios)") {
  const auto paths = traces_in(std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios");
  REQUIRE(!paths.empty());
  for (const auto& path : paths) check_claims(path);
}

TEST_CASE("claims: one copy and one GEMM are claimed by one finding; the other keeps what is left") {
  const std::string scenarios = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/";
  const std::map<std::string, double> no_floor = {{"min_saving_ms", 0}, {"min_saving_pct", 0}};
  // Scenario 01: the loss weight's 4 KiB pageable copy. h2d-copy-every-step (PTA101) claims it with its idle;
  // pageable-memcpy (PTA107), made to report it, has no copy time left to save.
  auto pageable_rule = no_floor;
  pageable_rule["min_share_pct"] = 0;
  CheckedTrace copy = testing::check_trace(scenarios + "01_loss_weight_every_step.json.gz", {{"PTA107", pageable_rule}});
  auto h2d = copy.of_rule("PTA101");
  auto pageable = copy.of_rule("PTA107");
  REQUIRE(h2d.size() == 1);
  REQUIRE(pageable.size() == 1);
  CHECK(h2d.front()->saving_ms_per_step > h2d.front()->time_ms_per_step);  // the copy plus its idle
  CHECK(pageable.front()->time_ms_per_step == doctest::Approx(h2d.front()->time_ms_per_step));
  CHECK(pageable.front()->saving_ms_per_step == 0.0);
  // Alone, pageable-memcpy saves 70% of the same copy.
  CheckedTrace alone = testing::check_trace(scenarios + "01_loss_weight_every_step.json.gz",
                                            {{"PTA107", pageable_rule}, {"PTA101", {{"min_steps_present_pct", 1000}}}});
  REQUIRE(alone.of_rule("PTA107").size() == 1);
  CHECK(alone.of_rule("PTA107").front()->saving_ms_per_step ==
        doctest::Approx(0.7 * pageable.front()->time_ms_per_step).epsilon(0.001));

  // Scenario 14: fp32 GEMMs on an A100. low-tensor-core-use (PTA105), made to fire, claims the sgemm kernels
  // first (half their time); fp32-matmul-without-tf32 (PTA116) then has none left.
  CheckedTrace gemm = testing::check_trace(
      scenarios + "14_fp32_matmul_without_tf32.json.gz",
      {{"PTA105", {{"max_non_tensor_core_share", 0}, {"min_matmul_share_pct", 0}}}, {"PTA116", no_floor}});
  auto tensor_cores = gemm.of_rule("PTA105");
  auto tf32 = gemm.of_rule("PTA116");
  REQUIRE(tensor_cores.size() == 1);
  REQUIRE(tf32.size() == 1);
  // Its claim: half the time of every matmul/convolution kernel without Tensor Cores, the sgemms' 1.30 ms
  // among them (its saving is then what the replay of its fix gives, docs/WHATIF.md).
  CHECK(tensor_cores.front()->saving_method.find("the saving is the 0.731 ms the step ledger gives it") != std::string::npos);
  CHECK(0.731 >= 0.5 * tf32.front()->time_ms_per_step);
  CHECK(tf32.front()->saving_ms_per_step == 0.0);
}

}  // namespace
}  // namespace ptadvise
