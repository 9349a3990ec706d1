// The load and the analysis run on several threads (windows, the link pass, the idle ledger); on every
// real trace of ../shared/traces the timeline's links, the ledger and (rules made ahead on several threads)
// the findings must be those of one thread.
// Skips when ../shared is absent.
#include <doctest/doctest.h>

#include <filesystem>
#include <variant>
#include <vector>

#include "corpus_traces.h"
#include "ptadvise/analysis.h"
#include "ptadvise/rules.h"

using namespace ptadvise;

namespace {

Timeline load_on(const std::filesystem::path& path, unsigned threads) {
  LoadOptions options;
  options.threads = threads;
  auto loaded = load_trace_file(path.string(), options);
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  return std::move(std::get<Timeline>(loaded));
}

bool same_gap(const IdleGap& a, const IdleGap& b) {
  return a.device == b.device && a.step == b.step && a.start_ns == b.start_ns && a.end_ns == b.end_ns &&
         a.cause == b.cause && a.culprit == b.culprit && a.launching == b.launching && a.queues_work == b.queues_work;
}

// The corpus traces under 3 MB (1 MiB under the sanitizers), in name order: the larger ones add minutes
// under the sanitizers and no other shape of trace.
std::vector<std::filesystem::path> small_traces() {
  std::vector<std::filesystem::path> files = testing::corpus_trace_files((uintmax_t{3} << 20) - 1);
  REQUIRE(files.size() >= 30);
  return files;
}

}  // namespace

TEST_CASE("corpus: links and the idle ledger are the same on one thread and on several") {
  auto traces = testing::corpus_traces();
  if (!traces) return;
  const std::vector<std::filesystem::path> files = small_traces();
  size_t with_gaps = 0;
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    const Timeline one = load_on(path, 1);
    const Timeline three = load_on(path, 3);
    REQUIRE(three.events.size() == one.events.size());
    CHECK(three.track_events == one.track_events);
    CHECK(three.events.parent == one.events.parent);
    CHECK(three.events.launch == one.events.launch);
    CHECK(three.events.dur_ns == one.events.dur_ns);
    const Analysis serial = analyze(one, KernelClassifier::builtin(), 1);
    const Analysis parallel = analyze(one, KernelClassifier::builtin(), 3);
    REQUIRE(parallel.idle.size() == serial.idle.size());
    size_t differing = 0;
    for (size_t g = 0; g < serial.idle.size(); ++g) differing += same_gap(serial.idle[g], parallel.idle[g]) ? 0 : 1;
    CHECK(differing == 0);
    CHECK(parallel.steady_state == serial.steady_state);
    with_gaps += serial.idle.empty() ? 0 : 1;
  }
  CHECK(with_gaps >= 20);
}

TEST_CASE("corpus: the findings are the same when the rules' selections are made on several threads") {
  auto traces = testing::corpus_traces();
  if (!traces) return;
  auto loaded_rules = load_rules({PTADVISE_SOURCE_DIR "/rules.d"});
  REQUIRE(std::holds_alternative<RuleSet>(loaded_rules));
  const RuleSet& rules = std::get<RuleSet>(loaded_rules);
  const std::vector<std::filesystem::path> files = small_traces();
  size_t with_findings = 0;
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    const Timeline timeline = load_on(path, 1);
    // One analysis each: the rules fill its memos (cpu_op_of, user_source) as they go.
    const Analysis for_one = analyze(timeline, KernelClassifier::builtin(), 1);
    const Analysis for_three = analyze(timeline, KernelClassifier::builtin(), 3);
    EvaluateOptions one, three;
    one.threads = 1;
    three.threads = 3;
    Coverage coverage_one, coverage_three;
    const std::vector<Finding> serial = evaluate(rules, for_one, one, &coverage_one);
    const std::vector<Finding> parallel = evaluate(rules, for_three, three, &coverage_three);
    CHECK(coverage_three.ran == coverage_one.ran);
    REQUIRE(parallel.size() == serial.size());
    for (size_t f = 0; f < serial.size(); ++f) {
      CHECK(parallel[f].rule_id == serial[f].rule_id);
      CHECK(parallel[f].message == serial[f].message);
      CHECK(parallel[f].saving_ms_per_step == serial[f].saving_ms_per_step);
      CHECK(parallel[f].saving_method == serial[f].saving_method);
      CHECK(parallel[f].idle_gaps == serial[f].idle_gaps);
      CHECK(parallel[f].evidence.size() == serial[f].evidence.size());
    }
    with_findings += serial.empty() ? 0 : 1;
  }
  // 15 of the traces of up to 1 MiB (the sanitizer build's) have findings, 20 or more of those under 3 MB.
  CHECK(with_findings >= (testing::kSanitizerBuild ? 15u : 20u));
}
