#include <doctest/doctest.h>

#include "ptadvise/advisor.h"
#include "sample_report.h"

using namespace ptadvise;

TEST_CASE("rank_findings orders by saving, then severity, then rule id") {
  auto findings = testing::sample_findings();
  rank_findings(findings);
  REQUIRE(findings.size() == 5);
  CHECK(findings[0].rule_id == "PTA101");
  CHECK(findings[0].site.source->line == 42);
  CHECK(findings[1].rule_id == "PTA001");  // 1.0 ms, warning
  CHECK(findings[2].rule_id == "PTA103");  // 1.0 ms, info: after the warning of equal saving
  CHECK(findings[3].rule_id == "PTA007");  // 0.8 ms
  CHECK(findings[4].rule_id == "PTA101");  // 0.5 ms
  CHECK(findings[4].site.source->line == 50);
  for (size_t i = 0; i < findings.size(); ++i) CHECK(findings[i].rank == static_cast<int>(i + 1));
}

TEST_CASE("rank_findings breaks equal savings and severities by rule id") {
  Finding a, b;
  a.rule_id = "PTA200";
  b.rule_id = "PTA100";
  a.saving_ms_per_step = b.saving_ms_per_step = 1.0;
  std::vector<Finding> findings{a, b};
  rank_findings(findings);
  CHECK(findings[0].rule_id == "PTA100");
  CHECK(findings[1].rule_id == "PTA200");
}

TEST_CASE("a finding below its noise floor ranks after every finding that passes its own") {
  // A harness's sync: its claim passed the floor, but its replayed saving (0.3 ms) is under the rule's
  // floor (0.5% of a 100 ms step): it informs, ranked after a smaller saving that passes its floor.
  Finding harness_sync, copy, fact;
  harness_sync.rule_id = "PTA102";
  harness_sync.saving_ms_per_step = 0.3;
  harness_sync.noise_floor_ms = 0.5;
  copy.rule_id = "PTA107";
  copy.saving_ms_per_step = 0.2;
  copy.noise_floor_ms = 0.1;
  fact.rule_id = "PTA120";  // saves nothing by design
  std::vector<Finding> findings{fact, harness_sync, copy};
  rank_findings(findings);
  CHECK(findings[0].rule_id == "PTA107");
  CHECK(findings[1].rule_id == "PTA102");
  CHECK(findings[2].rule_id == "PTA120");
  // At its floor it is an ordinary finding again and ranks by saving.
  findings[1].noise_floor_ms = 0.3;
  rank_findings(findings);
  CHECK(findings[0].rule_id == "PTA102");
  CHECK(findings[1].rule_id == "PTA107");
}

TEST_CASE("several findings of one rule at one site get distinct fingerprints, ordered by line") {
  auto findings = testing::sample_findings();
  rank_findings(findings);
  const std::string base = fingerprint(findings[0]);
  CHECK(findings[0].fingerprint == base);
  CHECK(findings[4].fingerprint == base + "-2");
  // The suffix follows the source line, not the saving: swap the savings and the lines keep their ids.
  auto swapped = testing::sample_findings();
  std::swap(swapped[0].saving_ms_per_step, swapped[1].saving_ms_per_step);
  rank_findings(swapped);
  CHECK(swapped[0].site.source->line == 50);
  CHECK(swapped[0].fingerprint == base + "-2");
  CHECK(swapped[4].site.source->line == 42);
  CHECK(swapped[4].fingerprint == base);
}

TEST_CASE("recoverable time is the sum of the savings, shown uncapped") {
  auto findings = testing::sample_findings();
  // 2.5 + 0.5 + 1.0 + 0.8 + 1.0: the evaluator's claims keep findings disjoint, so nothing is deduplicated
  // or capped here; a sum above the step would show as it is.
  CHECK(recoverable_ms_per_step(findings, 25.0) == doctest::Approx(5.8));
  CHECK(recoverable_ms_per_step(findings, 4.0) == doctest::Approx(5.8));
  CHECK(recoverable_ms_per_step({}, 25.0) == 0.0);
  const double third = findings[2].saving_ms_per_step;
  findings[2].saving_ms_per_step = -3;  // a negative estimate gives nothing back
  CHECK(recoverable_ms_per_step(findings, 25.0) == doctest::Approx(5.8 - third));
}

TEST_CASE("failing findings respect fail-on and the baseline") {
  Report report = testing::sample_report();
  CHECK(report.finding_count() == 5);
  CHECK(report.failing_count() == 4);  // the info finding does not fail at --fail-on warning
  report.fail_on = Severity::Info;
  CHECK(report.failing_count() == 5);
  report.fail_on = Severity::Error;
  CHECK(report.failing_count() == 0);
  report.fail_on = Severity::Warning;
  report.traces[0].new_finding[0] = false;
  CHECK(report.failing_count() == 3);
}

TEST_CASE("a finding that saves nothing measurable never fails a gate") {
  Report report = testing::sample_report();
  report.fail_on = Severity::Info;
  CHECK(report.failing_count() == 5);
  report.traces[0].findings[0].severity = Severity::Error;
  report.traces[0].findings[0].saving_ms_per_step = 0.0004;  // prints as 0.000 ms
  CHECK(report.failing_count() == 4);
  report.traces[0].findings[0].saving_ms_per_step = 0.0005;
  CHECK(report.failing_count() == 5);
}

TEST_CASE("a finding whose replayed saving is below its rule's noise floor informs but never fails a gate") {
  Report report = testing::sample_report();
  report.fail_on = Severity::Info;
  REQUIRE(report.failing_count() == 5);
  Finding& finding = report.traces[0].findings[0];
  finding.noise_floor_ms = 0.1;
  finding.saving_ms_per_step = 0.099;  // the step waits on other work: the fix alone barely shortens it
  CHECK(report.failing_count() == 4);
  finding.saving_ms_per_step = 0.1;
  CHECK(report.failing_count() == 5);
}
