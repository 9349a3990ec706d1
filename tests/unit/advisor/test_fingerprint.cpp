#include <doctest/doctest.h>

#include "ptadvise/advisor.h"
#include "sample_report.h"

using namespace ptadvise;

TEST_CASE("normalize_name replaces instance numbers, step numbers and addresses only") {
  CHECK(normalize_name("nn.Module: NLLLoss_3") == "nn.Module: NLLLoss_N");
  CHECK(normalize_name("ProfilerStep#12") == "ProfilerStep#N");
  CHECK(normalize_name("train.py(42): forward") == "train.py(N): forward");
  CHECK(normalize_name("<built-in method at 0x7f3a9c0b2e10>") == "<built-in method at 0xN>");
  CHECK(normalize_name("layer1_0.conv1") == "layer1_0.conv1");  // a Sequential index, stable
  // Digits that are part of a name stay.
  CHECK(normalize_name("aten::conv2d") == "aten::conv2d");
  CHECK(normalize_name("sm80_xmma_gemm_f16f16_128x64") == "sm80_xmma_gemm_f16f16_128x64");
  CHECK(normalize_name("volta_sgemm_64x64_nn") == "volta_sgemm_64x64_nn");
  CHECK(normalize_name("void at::native::vectorized_elementwise_kernel<4, float>(int)") ==
        "void at::native::vectorized_elementwise_kernel<4, float>(int)");
  CHECK(normalize_name("cudaLaunchKernel") == "cudaLaunchKernel");
  CHECK(normalize_name("") == "");
}

TEST_CASE("fingerprint ignores timing, evidence, step numbers, instance numbers and line numbers") {
  Finding a = testing::sample_findings()[2];  // the copy, no source line
  Finding b = a;
  b.evidence.clear();
  b.saving_ms_per_step = 99;
  b.time_ms_per_step = 42;
  b.count_per_step = 7;
  b.trace_path = "other.json";
  b.trace_rank = 3;
  b.site.op_chain = {"ProfilerStep#17", "nn.Module: Net_4", "aten::to", "aten::_to_copy", "aten::copy_"};
  CHECK(fingerprint(a) == fingerprint(b));
  CHECK(fingerprint(a).size() == 16);

  Finding c = a;
  c.site.kernel = "Memcpy HtoD (Pinned -> Device)";
  CHECK(fingerprint(a) != fingerprint(c));
  Finding d = a;
  d.rule_id = "PTA007";
  CHECK(fingerprint(a) != fingerprint(d));

  Finding with_source = testing::sample_findings()[0];
  Finding moved = with_source;
  moved.site.source->line = 77;                                  // an edit above the call
  moved.site.source->file = "/home/ci/work/project/train.py";  // another checkout
  with_source.site.source->file = "/workspace/project/train.py";
  moved.site.op_chain = {"aten::item", "aten::_local_scalar_dense"};  // another PyTorch version
  CHECK(fingerprint(with_source) == fingerprint(moved));
  moved.site.source->function = "evaluate";
  CHECK(fingerprint(with_source) != fingerprint(moved));
}

TEST_CASE("describe_site prefers the source line and shows the innermost ops") {
  auto findings = testing::sample_findings();
  CHECK(describe_site(findings[0].site) == "train.py:42 in train_step (aten::item > aten::_local_scalar_dense)");
  CHECK(describe_site(findings[2].site) ==
        "aten::to > aten::_to_copy > aten::copy_ > Memcpy HtoD (Pageable -> Device)");
  CHECK(describe_site(findings[4].site) == "(whole trace)");
  Site detail_only;
  detail_only.detail = "GPU 0";
  CHECK(describe_site(detail_only) == "GPU 0");
}

TEST_CASE("a copied or moved string pool keeps valid views (Timelines are copied and moved in vectors)") {
  StringPool pool;
  StringId id = pool.intern("aten::_local_scalar_dense, longer than the small-string buffer");
  std::vector<StringPool> pools;
  for (int i = 0; i < 9; ++i) pools.push_back(pool);  // reallocations move the earlier copies
  StringPool copy;
  copy = pools.front();
  for (const auto& p : pools) CHECK(p.view(id) == "aten::_local_scalar_dense, longer than the small-string buffer");
  CHECK(copy.view(id) == pool.view(id));
  CHECK(copy.find("aten::_local_scalar_dense, longer than the small-string buffer") == id);
  CHECK(copy.view(id).data() != pool.view(id).data());
  static_assert(std::is_nothrow_move_constructible_v<Timeline>);
}

TEST_CASE("fingerprint survives the fix: PyTorch's `what#Class.method` ranges keep `what#method`") {
  Finding stall = testing::sample_findings()[2];
  stall.rule_id = "PTA106";
  stall.site.source.reset();
  stall.site.kernel.clear();
  stall.site.op_chain.clear();
  stall.site.op = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  Finding with_workers = stall;
  with_workers.site.op = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";  // num_workers=0 -> 2
  CHECK(fingerprint(stall) == fingerprint(with_workers));
  Finding fused = stall;
  fused.site.op = "Optimizer.step#SGD.step";
  Finding adam = fused;
  adam.site.op = "Optimizer.step#FusedAdam.step";
  CHECK(fingerprint(fused) == fingerprint(adam));
  // Another method of the same range is another site; names without the shape are left alone.
  Finding zero_grad = fused;
  zero_grad.site.op = "Optimizer.zero_grad#SGD.zero_grad";
  CHECK(fingerprint(fused) != fingerprint(zero_grad));
  Finding op = stall;
  op.site.op = "aten::copy_";
  Finding other = stall;
  other.site.op = "aten::mm";
  CHECK(fingerprint(op) != fingerprint(other));
}
