// The replay of the unchanged graph must reproduce each real trace's measured step period: within 3% on
// every corpus trace with a steady step (docs/WHATIF.md). Skips when ../shared is absent.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/whatif.h"
#include "corpus_traces.h"

using namespace ptadvise;

TEST_CASE("corpus: the replay of every trace reproduces its step period within 3%") {
  if (!ptadvise::testing::corpus_traces()) return;
  const std::vector<std::filesystem::path> files = ptadvise::testing::corpus_trace_files();
  size_t replayed = 0, with_three_steps = 0;
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    auto loaded = load_trace_file(path.string());
    if (!std::holds_alternative<Timeline>(loaded)) continue;  // the corpus load test covers these
    const Timeline& timeline = std::get<Timeline>(loaded);
    Analysis analysis = analyze(timeline);
    // Every trace with a steady step: the issue asks it of those with 3 steps or more; lone and two-step
    // windows are timed by the same definitions (a late-closed marker, a whole window).
    if (analysis.steady_step_count() == 0) continue;
    with_three_steps += analysis.steps.size() >= 3 ? 1 : 0;
    whatif::Graph graph = whatif::build_graph(analysis);
    whatif::ReplayResult result = whatif::replay(graph);
    MESSAGE(path.filename().string() << ": measured " << result.measured_step_ms << " ms, replayed "
                                     << result.replayed_step_ms << " ms");
    CHECK(result.measured_step_ms > 0);
    CHECK(std::abs(result.replayed_step_ms - result.measured_step_ms) <= 0.03 * result.measured_step_ms);
    // The critical path's shares add up to the replayed period.
    double shares = 0;
    for (double ms : result.critical_ms) shares += ms;
    CHECK(shares == doctest::Approx(result.replayed_step_ms).epsilon(0.01));
    ++replayed;
  }
  // The corpus holds 14 traces of 3 steps or more, 7 of them of up to 1 MiB (the sanitizer build's).
  CHECK(with_three_steps >= (ptadvise::testing::kSanitizerBuild ? 7u : 14u));
  CHECK(replayed >= (ptadvise::testing::kSanitizerBuild ? 35u : 40u));
}

TEST_CASE("corpus: critical paths where the trace lacks launches or the periods tie") {
  auto traces = testing::corpus_traces();
  if (!traces) return;
  auto critical = [](const Timeline& timeline) { return whatif::replay(whatif::build_graph(analyze(timeline))); };
  auto share = [](const whatif::ReplayResult& result, whatif::Category category) {
    return result.critical_ms[static_cast<size_t>(category)] / result.replayed_step_ms;
  };
  SUBCASE("a trace cut down to a few GPU ops: the gaps no traced call explains are host time") {
    auto timeline = testing::load_corpus_trace(*traces, "HTA__tests__data__trace_compare__base__base.json.gz");
    if (!timeline) return;
    whatif::ReplayResult result = critical(*timeline);
    CHECK(share(result, whatif::Category::Host) > 0.99);  // was "copies 99.6%": the gap before a copy
    // The main thread's untraced time and the GPU's gaps no traced call explains, half and half.
    REQUIRE(result.critical_top.size() >= 2);
    CHECK(result.critical_top[0].name == "(host gap)");
    CHECK(result.critical_top[1].name == "(GPU gap, no traced launch)");
    CHECK(result.critical_top[0].ms_per_step + result.critical_top[1].ms_per_step > 0.99 * result.replayed_step_ms);
  }
  SUBCASE("a ROCm GEMM loop whose HIP calls are linked by External id, GPU 100% busy: compute") {
    auto timeline = testing::load_corpus_trace(
        *traces, "TraceLens__agent_evals__unit_tests_standalone.tar.gz__gemm_04_memory_tall_skinny.json");
    if (!timeline) return;
    size_t linked = 0;
    for (EventIndex i = 0; i < timeline->events.size(); ++i) {
      linked += timeline->events.kind[i] == EventKind::Kernel && timeline->events.launch[i] != kNone ? 1 : 0;
    }
    CHECK(linked == 10);  // every kernel to its hipExtModuleLaunchKernel
    whatif::ReplayResult result = critical(*timeline);
    CHECK(share(result, whatif::Category::Compute) > 0.99);  // was "host 94.4%": a tie went to the host
  }
}
