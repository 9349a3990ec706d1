// summarize(): every figure of `ptadvise summary` on a fixture whose numbers are worked out by hand.
#include <doctest/doctest.h>

#include "ptadvise/analysis.h"
#include "ptadvise/summary_printer.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

namespace {

TraceBuilder two_step_trace() {
  TraceBuilder trace(Era::Kineto2023);
  trace.device(0, "NVIDIA H100", 9, 0, 80LL << 30, 132);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.cpu_op("aten::mm", 0, 100);
  trace.launch("sm90_gemm", 10, 5, 100, 400);                    // 100..500
  trace.launch("ncclDevKernel_AllReduce_Sum_f32", 20, 5, 300, 400, 0, 20);  // 300..700, exposed 500..700
  const int64_t copy = trace.next_correlation();
  trace.runtime("cudaMemcpyAsync", 130, 5, copy);
  trace.memcpy("HtoD", "Pinned", "Device", 710, 20, 1 << 20, copy);  // 710..730
  const int64_t set = trace.next_correlation();
  trace.runtime("cudaMemsetAsync", 140, 5, set);
  trace.memset(730, 10, 4096, set);                                   // 730..740
  trace.launch("tiny_a", 150, 5, 800, 5);                             // 800..805
  trace.annotation("ProfilerStep#2", 1000, 500);
  trace.launch("tiny_a", 1010, 5, 1100, 5);
  trace.launch("sm90_gemm", 1020, 5, 1200, 200);
  return trace;
}

}  // namespace

TEST_CASE("summary: steps, busy share, breakdown, kernel figures and top lists") {
  Timeline timeline = two_step_trace().load("two_steps.json");
  Analysis analysis = analyze(timeline);
  Summary summary = summarize(analysis, 10);
  REQUIRE(summary.devices.size() == 1);
  CHECK(summary.devices[0].name == "NVIDIA H100");
  CHECK(summary.step_count == 2);
  CHECK(summary.step_source == StepSource::ProfilerStep);
  CHECK(summary.median_step_ms == doctest::Approx(0.75));
  CHECK(summary.p90_step_ms == doctest::Approx(1.0));
  CHECK(summary.span_ms == doctest::Approx(1.5));
  CHECK(summary.gpu_busy_pct == doctest::Approx(56.0));  // 840 of 1500 us
  CHECK(summary.compute_ms == doctest::Approx(0.610));
  CHECK(summary.communication_ms == doctest::Approx(0.200));
  CHECK(summary.memcpy_ms == doctest::Approx(0.020));
  CHECK(summary.memset_ms == doctest::Approx(0.010));
  CHECK(summary.idle_ms == doctest::Approx(0.660));
  CHECK(summary.kernel_count == 5);
  CHECK(summary.kernels_per_step == doctest::Approx(2.5));
  CHECK(summary.tiny_kernel_pct == doctest::Approx(40.0));
  REQUIRE(summary.top_kernels.size() == 3);
  CHECK(summary.top_kernels[0].name == "sm90_gemm");
  CHECK(summary.top_kernels[0].count == 2);
  CHECK(summary.top_kernels[0].total_ns == us(600));
  CHECK(summary.top_kernels[1].name == "ncclDevKernel_AllReduce_Sum_f32");
  CHECK(summary.top_kernels[2].name == "tiny_a");
  CHECK(summary.top_kernels[2].total_ns == us(10));
  REQUIRE(summary.top_cpu_ops.size() == 1);
  CHECK(summary.top_cpu_ops[0].name == "aten::mm");
  CHECK(summary.top_cpu_ops[0].total_ns == us(100));
  double ledger_ms = 0;
  for (const IdleShare& share : summary.idle_causes) ledger_ms += share.ms;
  CHECK(ledger_ms == doctest::Approx(0.660));  // the windows cover the span exactly here
  for (size_t k = 1; k < summary.idle_causes.size(); ++k) {
    CHECK(summary.idle_causes[k - 1].ms >= summary.idle_causes[k].ms);
  }
  CHECK(summarize(analysis, 1).top_kernels.size() == 1);
}

TEST_CASE("summary printers: text names the figures; JSON carries the documented keys") {
  Timeline timeline = two_step_trace().load("two_steps.json");
  Summary summary = summarize(analyze(timeline));
  const std::string text = summary_text(summary);
  CHECK(text.find("two_steps.json") == 0);
  CHECK(text.find("GPU 0: NVIDIA H100 (cc 9.0, 80.0 GiB, 132 SMs)") != std::string::npos);
  {
    Summary amd = summary;
    REQUIRE(!amd.devices.empty());
    amd.devices[0].name = "AMD Instinct MI300X";
    amd.devices[0].vendor = "AMD";
    amd.devices[0].compute_major = -1;
    amd.devices[0].total_global_mem = int64_t{192} << 30;
    amd.devices[0].num_sms = 304;  // deviceProperties' numSms: compute units on ROCm
    CHECK(summary_text(amd).find("GPU 0: AMD Instinct MI300X (192.0 GiB, 304 CUs)") != std::string::npos);
  }
  CHECK(text.find("2 (ProfilerStep: 2 ProfilerStep markers on thread 1)") != std::string::npos);
  CHECK(text.find("median 0.750 ms, p90 1.000 ms") != std::string::npos);
  CHECK(text.find("56.0%") != std::string::npos);
  CHECK(text.find("2.5 per step, 40.0% shorter than 10 us") != std::string::npos);
  CHECK(text.find("the last step") == std::string::npos);
  summary.last_step_partial = true;  // the analysis says why (tests/unit/trace/test_steps.cpp)
  summary.partial_note = "the last step holds less than half the events of the others (as when profiling stops "
                         "inside a step): left out";
  CHECK(summary_text(summary).find("\n                the last step holds less than half the events of the others (as "
                                   "when profiling stops inside a step): left out\n") != std::string::npos);
  summary.last_step_partial = false;
  summary.partial_note.clear();
  // Idle time that rounds to nothing gets no line ("external-wait 0.000 ms (100%)" said nothing true).
  const auto idle_causes = summary.idle_causes;
  summary.idle_causes = {{IdleCause::ExternalWait, 0.0002}};
  CHECK(summary_text(summary).find("idle in steps") == std::string::npos);
  summary.idle_causes = {{IdleCause::ExternalWait, 0.0002}, {IdleCause::Sync, 0.25}};
  CHECK(summary_text(summary).find("external-wait 0.000 ms (0%) | sync 0.250 ms (100%)") != std::string::npos);
  summary.idle_causes = idle_causes;

  const std::string json = summary_json(summary, 0);
  for (std::string key : {"\"devices\":[{\"id\":0,\"name\":\"NVIDIA H100\"", "\"steps\":{\"count\":2",
                          "\"source\":\"ProfilerStep\"", "\"median_ms\":0.75", "\"p90_ms\":1}",
                          "\"gpu_busy_pct\":56,", "\"kernels_per_step\":2.5", "\"tiny_kernel_pct\":40",
                          "\"communication\":0.2", "\"top_kernels\":[{\"name\":\"sm90_gemm\",\"count\":2"}) {
    CAPTURE(key);
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(json.front() == '{');
  CHECK(json.back() == '}');
  const std::string pretty = summary_json(summary);
  CHECK(pretty.find("\n  \"steps\": {\n    \"count\": 2,") != std::string::npos);
  const std::string many = summaries_json({summary, summary}, 0);
  CHECK(many.front() == '[');
  CHECK(many.find("},{\"schema_version\":\"1.0\",\"path\"") != std::string::npos);
}
