// Rules measure steady steps: a window that one-off work fills runs none of them, and says so.
#include <doctest/doctest.h>

#include <string>

#include "test_scenarios_support.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

namespace {

// One 10 ms step: a host-side stretch the GPU idles through (a sync, then Python), and a first launch that
// loads its kernel's code for `first_launch_us`.
Timeline window(int64_t first_launch_us) {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 10000);
  trace.launch("k", 0, 1, 0, 100);
  trace.cpu_op("preprocess", 200, 2000);  // host work: PTA121's
  trace.cpu_op("aten::relu", 2300, first_launch_us + 100);
  trace.launch("first_relu", 2310, first_launch_us, 2400 + first_launch_us, 100);
  trace.launch("k2", 2600 + first_launch_us, 5, 2700 + first_launch_us, 7300 - first_launch_us);
  return trace.load();
}

}  // namespace

TEST_CASE("rules: no rule runs on a window without a steady step, and the coverage says why") {
  const size_t rule_count = shipped_rules().infos().size();
  SUBCASE("warm-up fills 5 of 10 ms") {
    Timeline timeline = window(5000);
    Analysis analysis = analyze(timeline);
    REQUIRE_FALSE(analysis.steady_state);
    Coverage coverage;
    CHECK(evaluate(shipped_rules(), analysis, {}, &coverage).empty());
    CHECK(coverage.ran == 0);
    // Rules that need Python stacks or device properties count under those first; the rest under the steady state.
    CHECK(coverage.no_steady_state > 0);
    CHECK(coverage.skipped() == rule_count);
    CHECK(coverage.not_run.size() == rule_count);
  }
  SUBCASE("3 of 10 ms: the rules run, the host work is reported") {
    Timeline timeline = window(3000);
    Analysis analysis = analyze(timeline);
    REQUIRE(analysis.steady_state);
    Coverage coverage;
    auto findings = evaluate(shipped_rules(), analysis, {}, &coverage);
    CHECK(coverage.no_steady_state == 0);
    CHECK(coverage.ran > 0);
    bool host_work = false;
    for (const Finding& f : findings) host_work = host_work || f.rule_id == "PTA121";
    CHECK(host_work);
  }
}
