// Devices of real traces of ../shared/traces without (complete) deviceProperties: the architecture from
// kernel names, ROCm's gfx version never read as a CUDA compute capability, activity on a device id that
// deviceProperties does not list. Skips when ../shared is absent.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <variant>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"

using namespace ptadvise;

namespace {

const std::string kTraces = PTADVISE_SHARED_DIR "/traces/";

std::optional<Timeline> load(const std::string& file) {
  if (!std::filesystem::exists(kTraces + file)) {
    MESSAGE("skipped: " << kTraces << file << " is absent (the shared traces live beside the project)");
    return std::nullopt;
  }
  auto loaded = load_trace_file(kTraces + file);
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  return std::move(std::get<Timeline>(loaded));
}

const DeviceInfo& only_active_device(const Timeline& timeline) {
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.devices.size() == 1);
  const DeviceInfo* device = timeline.device(analysis.devices[0]);
  REQUIRE(device != nullptr);
  return *device;
}

}  // namespace

TEST_CASE("corpus devices: a V100 trace without deviceProperties gets Volta from volta_sgemm; the Tensor Core rule runs") {
  auto timeline = load("kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz");
  if (!timeline) return;
  const DeviceInfo& device = only_active_device(*timeline);
  CHECK(device.vendor == "NVIDIA");
  CHECK(device.compute_major == 7);
  CHECK(device.compute_minor == 0);
  CHECK(device.compute_inferred);
  auto rules = load_rules({PTADVISE_SOURCE_DIR "/rules.d"});
  REQUIRE(std::holds_alternative<RuleSet>(rules));
  EvaluateOptions options;
  options.only = {"low-tensor-core-use"};
  Coverage coverage;
  auto findings = evaluate(std::get<RuleSet>(rules), analyze(*timeline), options, &coverage);
  CHECK(coverage.not_run.empty());
  REQUIRE(findings.size() == 1);  // fp32 ResNet-50: sgemm/scudnn kernels
  CHECK(findings[0].rule_id == "PTA105");
}

TEST_CASE("corpus devices: CUTLASS names give the architecture (cutlass_70_wmma_tensorop)") {
  auto timeline = load("HTA__tests__data__trace_file_list__inference_rank_1.json.gz");
  if (!timeline) return;
  const DeviceInfo& device = only_active_device(*timeline);
  CHECK(device.vendor == "NVIDIA");
  CHECK(device.compute_major == 7);
  CHECK(device.compute_minor == 0);
  CHECK(device.compute_inferred);
}

TEST_CASE("corpus devices: an unnamed MI300 with computeMajor 9.4 is AMD, not compute capability 9.4") {
  // deviceProperties without names, computeMajor 9 / computeMinor 4 (gfx942); the HIP runtime tells.
  auto timeline = load("TraceLens__tests__traces__inference__vllm_decode_full__capture_traces__graph_capture_rank_0."
                       "1773709742341309550.pt.trace.json.gz");
  if (!timeline) return;
  const DeviceInfo& device = only_active_device(*timeline);
  CHECK(device.vendor == "AMD");
  CHECK(device.compute_major == -1);
  CHECK_FALSE(device.compute_inferred);
}

TEST_CASE("corpus devices: Triton kernels through the HIP runtime run on an AMD device") {
  auto timeline = load("TraceLens__tests__traces__torch_compile_triton__trace.json.gz");
  if (!timeline) return;
  const DeviceInfo& device = only_active_device(*timeline);
  CHECK(device.id == 2);
  CHECK(device.vendor == "AMD");
  CHECK(device.compute_major == -1);
}

TEST_CASE("corpus devices: kernels on a device deviceProperties does not list get the listed model") {
  // deviceProperties lists device 0 (AMD Instinct MI300X); every kernel runs on device 9.
  auto timeline = load("TraceLens__tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz");
  if (!timeline) return;
  const DeviceInfo& device = only_active_device(*timeline);
  CHECK(device.id == 9);
  CHECK(device.name == "AMD Instinct MI300X");
  CHECK(device.properties_borrowed);
  CHECK(device.total_global_mem == 206141652992);
  CHECK(device.vendor == "AMD");
  CHECK(device.compute_major == -1);
}

TEST_CASE("corpus devices: MI250 listed as AMD Radeon Graphics is AMD; its gfx 9.0 is no compute capability") {
  auto timeline = load("HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  if (!timeline) return;
  const DeviceInfo& device = only_active_device(*timeline);
  CHECK(device.id == 2);
  CHECK(device.vendor == "AMD");
  CHECK(device.compute_major == -1);
  CHECK_FALSE(device.properties_borrowed);
}
