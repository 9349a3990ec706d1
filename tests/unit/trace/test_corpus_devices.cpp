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
#include "corpus_traces.h"

using namespace ptadvise;

namespace {

std::optional<Timeline> load(const std::string& file) {
  if (!std::filesystem::exists(ptadvise::testing::corpus_dir() + file)) {
    MESSAGE("skipped: " << ptadvise::testing::corpus_dir() << file << " is absent (the shared traces live beside the project)");
    return std::nullopt;
  }
  auto loaded = load_trace_file(ptadvise::testing::corpus_dir() + file);
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

// The one device with activity in a shared trace, given to `check` (nothing when the trace is absent).
template <typename Check>
void with_active_device(const char* file, const char* why, Check check) {
  CAPTURE(file);
  CAPTURE(why);
  auto timeline = load(file);
  if (timeline) check(only_active_device(*timeline));
}

}  // namespace

TEST_CASE("corpus devices: NVIDIA traces without deviceProperties get the architecture of their kernels") {
  struct Case {
    const char* file;
    const char* why;
  };
  const Case cases[] = {
      {"kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz", "V100: volta_sgemm, volta_scudnn"},
      {"HTA__tests__data__trace_file_list__inference_rank_1.json.gz", "cutlass_70_wmma_tensorop"},
  };
  for (const Case& c : cases) {
    with_active_device(c.file, c.why, [](const DeviceInfo& device) {
      CHECK(device.vendor == "NVIDIA");
      CHECK(device.compute_major == 7);
      CHECK(device.compute_minor == 0);
      CHECK(device.compute_inferred);
    });
  }
}

TEST_CASE("corpus devices: on an inferred Volta the Tensor Core rule runs (fp32 ResNet-50)") {
  auto timeline = load("kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz");
  if (!timeline) return;
  auto rules = load_rules({PTADVISE_SOURCE_DIR "/rules.d"});
  REQUIRE(std::holds_alternative<RuleSet>(rules));
  EvaluateOptions options;
  options.only = {"low-tensor-core-use"};
  Coverage coverage;
  auto findings = evaluate(std::get<RuleSet>(rules), analyze(*timeline), options, &coverage);
  CHECK(coverage.not_run.empty());
  REQUIRE(findings.size() == 1);  // sgemm/scudnn kernels
  CHECK(findings[0].rule_id == "PTA105");
}

TEST_CASE("corpus devices: ROCm devices are AMD and their gfx version is no CUDA compute capability") {
  struct Case {
    const char* file;
    const char* why;
    int32_t id;
    const char* name;  // after inference
    bool borrowed;     // the id is not in deviceProperties; its details are the listed model's
  };
  const Case cases[] = {
      {"TraceLens__tests__traces__inference__vllm_decode_full__capture_traces__graph_capture_rank_0."
       "1773709742341309550.pt.trace.json.gz",
       "unnamed devices with computeMajor 9 / computeMinor 4 (gfx942); the HIP runtime tells", 2, "", false},
      {"TraceLens__tests__traces__torch_compile_triton__trace.json.gz",
       "Triton kernels through the HIP runtime on device 2; deviceProperties lists device 0", 2,
       "AMD Instinct MI300X", true},
      {"TraceLens__tests__traces__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
       "deviceProperties lists device 0 (an MI300X); every kernel runs on device 9", 9, "AMD Instinct MI300X", true},
      {"HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
       "an MI250 listed as AMD Radeon Graphics, computeMajor 9 (gfx90a)", 2, "AMD Radeon Graphics", false},
  };
  for (const Case& c : cases) {
    with_active_device(c.file, c.why, [&c](const DeviceInfo& device) {
      CHECK(device.id == c.id);
      CHECK(device.name == c.name);
      CHECK(device.properties_borrowed == c.borrowed);
      CHECK(device.vendor == "AMD");
      CHECK(device.compute_major == -1);
      CHECK_FALSE(device.compute_inferred);
    });
  }
}
