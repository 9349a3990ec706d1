// The shipped rules on real traces of ../shared/traces, reviewed by hand (docs/CORPUS_REVIEW.md says why each
// finding is right): the exact set of rule ids per trace, and the sites of the rules this review is about.
// Skips, with a message, when the corpus is not beside the project.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "test_scenarios_support.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

namespace ptadvise {
namespace {

using testing::CheckedTrace;
using testing::joined;

const std::string kCorpus = std::string(PTADVISE_SHARED_DIR) + "/traces/";

bool corpus_present() {
  if (std::filesystem::is_directory(kCorpus)) return true;
  MESSAGE("skipped: the trace corpus " << kCorpus << " is not there");
  return false;
}

const Finding* first_of(const CheckedTrace& trace, const std::string& rule) {
  auto found = trace.of_rule(rule);
  return found.empty() ? nullptr : found.front();
}

std::string source_of(const Finding& finding) {
  if (!finding.site.source) return "";
  return finding.site.source->file + ":" + std::to_string(finding.site.source->line);
}

struct Reviewed {
  const char* file;
  std::multiset<std::string> rules;
};

const std::vector<Reviewed>& reviewed_traces() {
  static const std::vector<Reviewed> reviewed = {
      // ResNet-50 on a V100-era PyTorch 1.8, DataLoader(num_workers=0) and its num_workers=4 twin (two samples).
      // The blocking batch copy (PTA108) and zero_grad (PTA109) save 0.1-0.6% of a 120-215 ms step: at or
      // below the noise floor (0.5%), they are reported only where they reach it. The traces have no
      // deviceProperties: the volta_ kernels tell a V100 (cc 7.0), where 69 ms per step of fp32 convolutions
      // and GEMMs (volta_sgemm, implicit_convolve_sgemm) run without Tensor Cores (PTA105).
      // The GPU also starves while the host runs the ops themselves (cudnn_convolution, empty, batch_norm
      // host time: 10-58 ms per step of idle): host-bound CPU work (PTA121). So faster GPU work can take
      // only 9-21 ms off a step (the step ledger's bound), which PTA105 claims first: the pageable copies
      // (PTA107) and, on the tb sample, the per-tensor optimizer kernels (PTA110) have no GPU time left to save.
      {"kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
       {"PTA104", "PTA105", "PTA106", "PTA110", "PTA121"}},
      {"kineto__plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
       {"PTA104", "PTA105", "PTA110", "PTA121"}},
      {"kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
       {"PTA105", "PTA106", "PTA121"}},
      {"kineto__tb_plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
       {"PTA104", "PTA105", "PTA108", "PTA121"}},
      // ResNet training in fp32 on a V100 with foreach SGD and set_to_none.
      {"HTA__tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", {"PTA105"}},
      // Hugging Face inference on an H100 (bf16), one profiled step each; the harness synchronises every step.
      // Below the noise floor: Qwen's attention-mask sync (0.16 ms, 0.3%) and two objects built per step
      // (0.01 ms), timesformer's blocking input copy (0.17 ms, 0.05%). The harness's syncs cost only the
      // idle while the host waited plus the refill to the next launch: what follows them in timesformer is
      // video decoding and image preprocessing (PTA121, 105 + 33 + 33 ms per step), in bert and Falconsai
      // tokenisation and Python, none of it the syncs'.
      {"TraceLens__tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", {"PTA102"}},
      {"TraceLens__tests__traces__h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz",
       {"PTA104", "PTA117", "PTA121", "PTA121", "PTA121"}},
      {"TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
       {"PTA103", "PTA104", "PTA117", "PTA121", "PTA121"}},
      // PTA118 (memory underused) estimates no saving here (0 ms): below the noise floor.
      {"TraceLens__tests__traces__h100__Falconsai_nsfw_image_detection__1016002.json.gz", {"PTA103", "PTA104"}},
      // Apex FusedAdam training on an A100: no per-tensor optimizer kernels. The 4-byte copies' refill stops
      // at the backward's host work (PTA121), leaving PTA101 below the noise floor.
      {"HTA__tests__data__negative_queue_length_values_check__rank0.json.gz", {"PTA102", "PTA104", "PTA121"}},
      // Small training loop on a Quadro GP100 with zero_grad() filling gradients.
      // zero_grad's in-place zeroing saves 0.008 ms per step: below the 0.01 ms floor.
      {"HTA__tests__data__with_gpu_user_annotation__step_based_trace_2543932.json.gz",
       {"PTA101", "PTA101", "PTA103", "PTA104", "PTA121"}},
      // A CPU-only trace: nothing to report.
      {"HTA__tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", {}},
  };
  return reviewed;
}

TEST_CASE("corpus: the reviewed traces get exactly the reviewed rules") {
  if (!corpus_present()) return;
  for (const auto& [file, rules] : reviewed_traces()) {
    const std::string name = file;
    CAPTURE(name);
    CheckedTrace trace = testing::check_trace(kCorpus + name);
    CHECK_MESSAGE(testing::shipped_only(trace.rule_ids()) == testing::shipped_only(rules), name << ": got " << joined(trace.rule_ids()));
  }
}

TEST_CASE("corpus: resnet50 with num_workers=0 stalls in the loader, its num_workers=4 twin does not") {
  if (!corpus_present() || !testing::shipped("PTA106")) return;
  for (const char* sample : {"kineto__plugin__samples__", "kineto__tb_plugin__samples__"}) {
    CheckedTrace workers0 = testing::check_trace(kCorpus + sample + "resnet50_num_workers_0__worker0.pt.trace.json.gz");
    CheckedTrace workers4 = testing::check_trace(kCorpus + sample + "resnet50_num_workers_4__worker0.pt.trace.json.gz");
    const Finding* stall = first_of(workers0, "PTA106");
    REQUIRE(stall != nullptr);
    CHECK(stall->site.op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    CHECK(workers4.of_rule("PTA106").empty());
  }
}

TEST_CASE("corpus: resnet50's batch copy, zero_grad and SGD of PyTorch 1.8") {
  if (!corpus_present()) return;
  const std::string path = kCorpus + "kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz";
  CheckedTrace trace = testing::check_trace(path);
  // The step is host-bound: faster GPU work can take at most 9.1 ms off it, and PTA105's fp32 convolutions
  // claim all of that first, so the pageable copies have nothing left to save.
  const Finding* precision = first_of(trace, "PTA105");
  REQUIRE(precision != nullptr);
  CHECK(precision->saving_ms_per_step == doctest::Approx(9.107).epsilon(0.001));
  CHECK(precision->saving_method.find("Limited to 9.11 of 34.4 ms per step") != std::string::npos);
  CHECK(first_of(trace, "PTA107") == nullptr);
  // Without that finding (its threshold out of reach) they get their share of the bound:
  // images (19.3 MB) and targets (256 B) from pageable memory, 2.3 ms of copies per 212 ms step.
  CheckedTrace without_precision = testing::check_trace(path, {{"PTA105", {{"min_matmul_share_pct", 1000}}}});
  const Finding* pageable = first_of(without_precision, "PTA107");
  REQUIRE(pageable != nullptr);
  CHECK(pageable->site.op == "aten::copy_");
  CHECK(pageable->count_per_step == doctest::Approx(2.0));
  CHECK(pageable->time_ms_per_step == doctest::Approx(2.31).epsilon(0.01));
  CHECK(pageable->saving_ms_per_step == doctest::Approx(0.7 * pageable->time_ms_per_step).epsilon(0.01));
  // .to(device) without non_blocking (cudaMemcpyAsync then cudaStreamSynchronize) and zero_grad's 161 in-place
  // zeroings are real, but save 0.25 ms of a 215 ms step each: below the noise floor.
  CHECK(first_of(trace, "PTA108") == nullptr);
  CHECK(first_of(trace, "PTA109") == nullptr);
  // 161 parameter tensors updated with 3 kernels each
  const Finding* single_tensor = first_of(trace, "PTA110");
  REQUIRE(single_tensor != nullptr);
  CHECK(single_tensor->count_per_step == doctest::Approx(483.0));
}

TEST_CASE("corpus: sites with Python stacks point at the library lines that cause them") {
  if (!corpus_present()) return;
  CheckedTrace qwen = testing::check_trace(kCorpus + "TraceLens__tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
  const Finding* harness = first_of(qwen, "PTA102");
  REQUIRE(harness != nullptr);
  CHECK(harness->site.op == "cudaDeviceSynchronize");
  CHECK(source_of(*harness) == "moca/library/profiling/profile.py:34");

  CheckedTrace timesformer = testing::check_trace(
      kCorpus + "TraceLens__tests__traces__h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz");
  // The harness's syncs are not charged for the decoding and preprocessing that follow them: those are
  // host-bound CPU work at their own lines.
  CHECK(timesformer.of_rule("PTA102").empty());
  std::set<std::string> host_work;
  for (const Finding* finding : timesformer.of_rule("PTA121")) host_work.insert(source_of(*finding));
  CHECK(host_work == std::set<std::string>{"transformers/image_transforms.py:390", "transformers/image_transforms.py:93",
                                           "transformers/pipelines/video_classification.py:174"});
  const Finding* normalize = first_of(timesformer, "PTA121");
  REQUIRE(normalize != nullptr);
  CHECK(normalize->saving_ms_per_step == doctest::Approx(105.0).epsilon(0.01));
  const Finding* unaligned = first_of(timesformer, "PTA117");
  REQUIRE(unaligned != nullptr);
  CHECK(unaligned->site.op == "aten::bmm");  // attention over 3137 tokens: [96, 64, 3137] operands
  CHECK(unaligned->count_per_step == doctest::Approx(24.0));
  CHECK(source_of(*unaligned) == "transformers/models/timesformer/modeling_timesformer.py:200");
}

}  // namespace
}  // namespace ptadvise

TEST_SUITE_END();
