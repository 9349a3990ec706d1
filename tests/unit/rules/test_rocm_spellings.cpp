// ROCm spellings in the sync and copy rules and the idle ledger: hipMemcpyWithStream (ROCm's PyTorch copies
// without non_blocking through it, and it waits for the stream), `Memcpy DtoH (Device -> Host)`,
// hipDeviceSynchronize, hipLaunchKernel. Real ROCm traces of ../shared/traces and a hand-built one.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "trace_builder.h"

namespace {

using ptadvise::Finding;

const std::string kTraces = PTADVISE_SHARED_DIR "/traces/";

std::vector<Finding> run_rule(const ptadvise::Analysis& analysis, const std::string& rule,
                              const std::map<std::string, double>& thresholds = {}) {
  auto rules = ptadvise::load_rules({PTADVISE_SOURCE_DIR "/rules.d"});
  if (auto* error = std::get_if<ptadvise::RuleError>(&rules)) FAIL(error->message);
  ptadvise::EvaluateOptions options;
  options.only = {rule};
  const auto* info = std::get<ptadvise::RuleSet>(rules).find(rule);
  if (info != nullptr && !thresholds.empty()) options.thresholds[info->id] = thresholds;
  return ptadvise::evaluate(std::get<ptadvise::RuleSet>(rules), analysis, options);
}

// 4 steps of 10 ms on an MI210: aten::to > aten::copy_ > hipMemcpyWithStream copies a 4 MiB batch
// (`Memcpy HtoD (Host -> Device)`, 1 ms on the GPU from 2 ms into the step); the host returns at 3.02 ms and
// launches an MFMA GEMM with hipLaunchKernel (6.5 ms from 3.2 ms).
ptadvise::Timeline make_rocm_trace() {
  ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
  trace.device(0, "AMD Instinct MI210", 9, 0, 64LL << 30);  // ROCm writes the gfx version (gfx90a: 9.0)
  for (int step = 0; step < 4; ++step) {
    const double base = step * 10000.0;
    trace.annotation("ProfilerStep#" + std::to_string(step + 1), base, 10000);
    trace.cpu_op("aten::to", base + 100, 3000);
    trace.cpu_op("aten::copy_", base + 110, 2980);
    const int64_t copy = trace.next_correlation();
    trace.runtime("hipMemcpyWithStream", base + 120, 2900, copy);
    trace.memcpy("HtoD", "Host", "Device", base + 2000, 1000, 4 << 20, copy);
    trace.cpu_op("aten::mm", base + 3100, 100);
    const int64_t gemm = trace.next_correlation();
    trace.runtime("hipLaunchKernel", base + 3110, 10, gemm);
    trace.kernel("Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0", base + 3200, 6500, gemm);
    trace.flow(gemm, base + 3110, 1, base + 3200, 0, 7);
  }
  return trace.load();
}

}  // namespace

TEST_CASE("ROCm: hipMemcpyWithStream blocks the host; the ledger and blocking-batch-copy see it") {
  ptadvise::Timeline timeline = make_rocm_trace();
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  REQUIRE(analysis.steps.size() == 4);
  // The device is AMD: its computeMajor 9 is a gfx version, not a CUDA compute capability.
  REQUIRE(timeline.devices.size() == 1);
  CHECK(timeline.devices[0].vendor == "AMD");
  CHECK(timeline.devices[0].compute_major == -1);
  for (ptadvise::EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.events.kind[i] == ptadvise::EventKind::Kernel) {
      CHECK(analysis.family_of(i) == ptadvise::KernelFamily::MatmulTensorCore);  // MFMA: Matrix Cores
    }
  }
  // The GPU idles from the GEMM's end to the copy; while the host is blocked in hipMemcpyWithStream the
  // ledger charges it to the sync.
  // Per step: 120..2000 µs (before the copy) and 3000..3020 µs (the copy done, the call not yet returned).
  CHECK(analysis.idle_ns(ptadvise::IdleCause::Sync) == 4 * (1880 + 20) * 1000);
  auto findings = run_rule(analysis, "blocking-batch-copy");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].site.op == "aten::copy_");
  CHECK(findings[0].count_per_step == 1);
  CHECK(findings[0].steps_present_pct == 100);
  CHECK(findings[0].saving_ms_per_step == doctest::Approx(1.9));
}

TEST_CASE("ROCm corpus: a hipMemcpyWithStream that waits behind held-back kernels is an external wait (sglang decode)") {
  const std::string file = "TraceLens__tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz";
  if (!std::filesystem::exists(kTraces + file)) {
    MESSAGE("skipped: " << kTraces << file << " is absent (the shared traces live beside the project)");
    return;
  }
  auto loaded = ptadvise::load_trace_file(kTraces + file);
  REQUIRE(std::holds_alternative<ptadvise::Timeline>(loaded));
  const auto& timeline = std::get<ptadvise::Timeline>(loaded);
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  // aten::copy_ > hipMemcpyWithStream blocks 463 ms; the kernels launched before it start only when it
  // returns: the GPU held queued work back, so the wait is recognised as a blocking call but charged to
  // external-wait, and sync-in-step (which claims `sync`) reports nothing.
  int64_t external_ns = 0, sync_ns = 0;
  for (const ptadvise::IdleGap& gap : analysis.idle) {
    if (gap.cause == ptadvise::IdleCause::ExternalWait) {
      external_ns += gap.duration_ns();
      REQUIRE(gap.culprit != ptadvise::kNone);
      CHECK(timeline.name(gap.culprit) == "aten::copy_");
    }
    if (gap.cause == ptadvise::IdleCause::Sync) sync_ns += gap.duration_ns();
  }
  CHECK(external_ns == doctest::Approx(463.0e6).epsilon(0.01));
  CHECK(sync_ns < 1'000'000);
  CHECK(run_rule(analysis, "sync-in-step").empty());
}

TEST_CASE("ROCm corpus: hipDeviceSynchronize and a device-to-host copy are sync sites (xDiT SD 3.5)") {
  const std::string file = "TraceLens__tests__traces__inference__xdit_sd_3.5__profile_trace_rank_0.json.gz";
  if (!std::filesystem::exists(kTraces + file)) {
    MESSAGE("skipped: " << kTraces << file << " is absent (the shared traces live beside the project)");
    return;
  }
  auto loaded = ptadvise::load_trace_file(kTraces + file);
  REQUIRE(std::holds_alternative<ptadvise::Timeline>(loaded));
  const auto& timeline = std::get<ptadvise::Timeline>(loaded);
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  // Each costs the GPU only the idle while the host waited plus the refill to its next launch; what follows
  // them is the pipeline's host work (host-bound-cpu-work), so the reporting thresholds are lowered here.
  auto findings = run_rule(analysis, "sync-in-step", {{"min_idle_pct", 0}, {"min_saving_ms", 0}, {"min_saving_pct", 0}});
  // (Also the scheduler's .item() and nonzero, 4 sites in all, each a few tens of µs of idle per step.)
  REQUIRE(findings.size() == 4);
  const Finding* device_sync = nullptr;
  const Finding* copy = nullptr;
  for (const Finding& finding : findings) {
    if (finding.site.op == "hipDeviceSynchronize") device_sync = &finding;
    if (finding.site.op == "aten::copy_") copy = &finding;
  }
  REQUIRE(device_sync != nullptr);
  CHECK(device_sync->count_per_step == 2);
  REQUIRE(copy != nullptr);
  REQUIRE(copy->site.source);
  CHECK(copy->site.source->file.find("image_processor.py") != std::string::npos);
}
