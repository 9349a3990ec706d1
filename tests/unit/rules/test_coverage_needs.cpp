// The memory rules say when a trace cannot show what they measure: no memory events (recorded without
// profile_memory=True) or no memory size (no deviceProperties; a compute capability inferred from kernel
// names gives none), instead of finding nothing silently.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "test_scenarios_support.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

namespace {

// Five 10 ms steps of one small kernel each: the GPU waits for the host, with little of its memory used.
Timeline steps(bool properties, bool memory_events, const std::string& kernel = "k") {
  TraceBuilder trace(Era::Kineto2023);
  if (properties) trace.device(0, "NVIDIA A100-SXM4-80GB", 8, 0, 85'000'000'000);
  for (int s = 0; s < 5; ++s) {
    const int64_t t = s * 10'000;
    trace.annotation("ProfilerStep#" + std::to_string(s + 1), t, 10'000);
    trace.cpu_op("preprocess", t + 100, 8'000);
    trace.launch(kernel, t + 8'200, 5, t + 8'300, 500);
    if (memory_events) trace.memory_instant(static_cast<double>(t + 8'150), 2'000'000'000, 4'000'000'000);
  }
  return trace.load();
}

std::string reason_for(const Coverage& coverage, const std::string& id) {
  auto it = std::find_if(coverage.not_run.begin(), coverage.not_run.end(),
                         [&](const auto& entry) { return entry.first == id; });
  return it == coverage.not_run.end() ? std::string("ran") : it->second;
}

Coverage coverage_of(const Timeline& timeline) {
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steady_state);
  Coverage coverage;
  evaluate(shipped_rules(), analysis, {}, &coverage);
  CHECK(coverage.ran + coverage.skipped() == shipped_rules().infos().size());
  return coverage;
}

}  // namespace

TEST_CASE("coverage: the memory rules need memory events and the GPU's memory size, and say so") {
  SUBCASE("both: they run") {
    Coverage coverage = coverage_of(steps(true, true));
    CHECK(reason_for(coverage, "PTA118") == "ran");
    CHECK(reason_for(coverage, "PTA119") == "ran");
    CHECK(coverage.no_memory_events == 0);
  }
  SUBCASE("recorded without profile_memory") {
    Coverage coverage = coverage_of(steps(true, false));
    CHECK(reason_for(coverage, "PTA118") == "no memory events");
    CHECK(reason_for(coverage, "PTA119") == "no memory events");
    CHECK(coverage.no_memory_events == 2);
    CHECK(reason_for(coverage, "PTA116") == "ran");  // the compute capability only: deviceProperties has it
  }
  SUBCASE("no deviceProperties; the compute capability inferred from an sm80 kernel's name") {
    Coverage coverage = coverage_of(steps(false, true, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8"));
    CHECK(reason_for(coverage, "PTA118") == "no GPU memory size");
    CHECK(reason_for(coverage, "PTA119") == "no GPU memory size");
    CHECK(coverage.no_device_properties == 2);
  }
}
