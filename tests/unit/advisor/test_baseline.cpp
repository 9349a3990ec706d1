#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "ptadvise/advisor.h"
#include "sample_report.h"

using namespace ptadvise;

TEST_CASE("baseline is sorted, stable and round-trips") {
  auto findings = testing::sample_findings();
  rank_findings(findings);
  Baseline baseline = make_baseline(findings);
  REQUIRE(baseline.entries.size() == 5);
  CHECK(baseline.entries[0].rule_id == "PTA001");
  CHECK(baseline.entries[1].rule_id == "PTA007");
  CHECK(baseline.entries[2].rule_id == "PTA101");
  CHECK(baseline.entries[2].site == "train.py:42 in train_step (aten::item > aten::_local_scalar_dense)");
  CHECK(baseline.entries[3].site == "train.py:50 in train_step (aten::item > aten::_local_scalar_dense)");
  CHECK(baseline.entries[4].rule_id == "PTA103");

  std::ostringstream text;
  write_baseline(baseline, text);
  const std::string fp = findings[0].fingerprint;
  CHECK(text.str().find("  - fingerprint: \"" + fp + "\"\n"
                        "    rule: \"PTA101\"\n"
                        "    name: \"item-sync-in-step\"\n"
                        "    site: \"train.py:42 in train_step (aten::item > aten::_local_scalar_dense)\"\n"
                        "    saving_ms_per_step: 2.500\n") != std::string::npos);

  auto parsed = parse_baseline(text.str(), "baseline.yaml");
  REQUIRE(std::holds_alternative<Baseline>(parsed));
  const Baseline& read = std::get<Baseline>(parsed);
  REQUIRE(read.entries.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(read.entries[i].fingerprint == baseline.entries[i].fingerprint);
    CHECK(read.entries[i].site == baseline.entries[i].site);
    CHECK(read.entries[i].saving_ms_per_step == doctest::Approx(baseline.entries[i].saving_ms_per_step));
  }
  // Writing what was read gives the same bytes: diffs show only real changes.
  std::ostringstream again;
  write_baseline(read, again);
  CHECK(again.str() == text.str());

  // Another recording: different order, timings and savings, the same file.
  auto shuffled = testing::sample_findings();
  std::reverse(shuffled.begin(), shuffled.end());
  for (auto& f : shuffled) f.evidence.clear();
  rank_findings(shuffled);
  Baseline same = make_baseline(shuffled);
  for (size_t i = 0; i < 5; ++i) CHECK(same.entries[i].fingerprint == baseline.entries[i].fingerprint);
}

TEST_CASE("matching a baseline: accepted, new and stale entries") {
  auto findings = testing::sample_findings();
  rank_findings(findings);
  Baseline baseline = make_baseline({findings[0], findings[1]});
  BaselineEntry gone{"00000000deadbeef", "PTA900", "gone-rule", "somewhere", 1.0};
  baseline.entries.push_back(gone);
  BaselineMatch match = match_baseline(baseline, findings);
  CHECK(match.in_baseline == std::vector<bool>{true, true, false, false, false});
  REQUIRE(match.stale.size() == 1);
  CHECK(match.stale[0].fingerprint == "00000000deadbeef");
}

TEST_CASE("an empty baseline is valid and malformed ones are errors with positions") {
  std::ostringstream text;
  write_baseline(Baseline{}, text);
  auto empty = parse_baseline(text.str(), "b.yaml");
  REQUIRE(std::holds_alternative<Baseline>(empty));
  CHECK(std::get<Baseline>(empty).entries.empty());

  auto no_rule = parse_baseline("version: 1\nfindings:\n  - fingerprint: abc\n", "b.yaml");
  REQUIRE(std::holds_alternative<ConfigError>(no_rule));
  CHECK(std::get<ConfigError>(no_rule).message == "b.yaml:3:5: entry without 'rule'");
  auto wrong = parse_baseline("version: 2\nfindings: []\n", "b.yaml");
  REQUIRE(std::holds_alternative<ConfigError>(wrong));
  CHECK(std::get<ConfigError>(wrong).message == "b.yaml:1:10: version: expected 1");
  auto list = parse_baseline("- a\n", "b.yaml");
  REQUIRE(std::holds_alternative<ConfigError>(list));
  CHECK(std::get<ConfigError>(list).message == "b.yaml:1:1: expected a baseline with a findings list");
}
