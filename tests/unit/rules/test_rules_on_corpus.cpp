// The shipped rules on real traces of ../shared/traces: findings where the recording has the mistake,
// none on its fixed twin.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "corpus_traces.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

namespace {

// Findings of `rule` on a shared trace; nullopt (with a message) when the shared traces are absent.
std::optional<std::vector<ptadvise::Finding>> findings_on(const std::string& file, const std::string& rule,
                                                         const std::map<std::string, double>& thresholds = {}) {
  if (!std::filesystem::exists(ptadvise::testing::corpus_dir() + file)) {
    MESSAGE("skipped: " << ptadvise::testing::corpus_dir() << file << " is absent (the shared traces live beside the project)");
    return std::nullopt;
  }
  auto rules = ptadvise::load_rules({PTADVISE_SOURCE_DIR "/rules.d"});
  if (auto* error = std::get_if<ptadvise::RuleError>(&rules)) FAIL(error->message);
  auto loaded = ptadvise::load_trace_file(ptadvise::testing::corpus_dir() + file);
  if (auto* error = std::get_if<ptadvise::LoadError>(&loaded)) FAIL(error->message);
  const auto& timeline = std::get<ptadvise::Timeline>(loaded);
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  ptadvise::EvaluateOptions options;
  options.only = {rule};
  auto* info = std::get<ptadvise::RuleSet>(rules).find(rule);
  if (info != nullptr && !thresholds.empty()) options.thresholds[info->id] = thresholds;
  return ptadvise::evaluate(std::get<ptadvise::RuleSet>(rules), analysis, options);
}

}  // namespace

TEST_CASE("data-loader-stall on the TensorBoard plugin's ResNet-50 samples: num_workers=0 versus 4") {
  auto stalled = findings_on("kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
                             "data-loader-stall");
  if (!stalled) return;
  REQUIRE(stalled->size() == 1);
  const auto& finding = stalled->front();
  CHECK(finding.site.op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  CHECK(finding.count_per_step == 1);
  CHECK(finding.steps_present_pct == 100);
  // mean of the six __next__ calls: (45652 + 43830 + 42919 + 62863 + 40366 + 44108) / 6 µs
  CHECK(finding.time_ms_per_step == doctest::Approx(46.623).epsilon(0.001));
  CHECK(finding.saving_ms_per_step > 5);
  CHECK(finding.saving_ms_per_step < finding.time_ms_per_step);

  auto workers = findings_on("kineto__tb_plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
                             "data-loader-stall");
  REQUIRE(workers);
  CHECK(workers->empty());
}

TEST_CASE("data-loader-stall on the older plugin samples: num_workers=0 versus 4") {
  auto stalled = findings_on("kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
                             "data-loader-stall");
  if (!stalled) return;
  REQUIRE(stalled->size() == 1);
  CHECK(stalled->front().site.op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  auto workers = findings_on("kineto__plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
                             "data-loader-stall");
  REQUIRE(workers);
  CHECK(workers->empty());
}

TEST_CASE("an explicit synchronize called from Python is its own sync site") {
  // Each costs the GPU only the idle while the host waited and the refill to its next launch, well below
  // the reporting thresholds (what follows is the harness's and the tokenizer's host work): lowered here.
  auto findings = findings_on("TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
                              "sync-in-step", {{"min_idle_pct", 0}, {"min_saving_ms", 0}, {"min_saving_pct", 0}});
  if (!findings) return;
  REQUIRE(findings->size() == 2);
  const auto& device_sync = findings->at(0).site.op == "cudaDeviceSynchronize" ? findings->at(0) : findings->at(1);
  const auto& mask_check = &device_sync == &findings->at(0) ? findings->at(1) : findings->at(0);
  CHECK(device_sync.site.op == "cudaDeviceSynchronize");
  CHECK(mask_check.site.op == "aten::is_nonzero");
  REQUIRE(mask_check.site.source);
  CHECK(mask_check.site.source->file.find("modeling_attn_mask_utils.py") != std::string::npos);
}

TEST_SUITE_END();
