// job/: the jobs of a check (assemble_jobs: which ranks are one job, the job rules on it, the per-rank findings
// every rank has folded into one; evaluate_lone_rank: a rank of a larger job checked alone).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "job_fixtures.h"
#include "ptadvise/job.h"
#include "ptadvise/rules.h"

namespace {

using ptadvise::CollectiveType;
using ptadvise::testing::digests_of;
using ptadvise::testing::job_rules;
using ptadvise::testing::kSkewed;
using ptadvise::testing::pointers;

ptadvise::Finding rank_finding(const std::string& fingerprint, const std::string& message) {
  ptadvise::Finding f;
  f.rule_id = "PTA001";
  f.fingerprint = fingerprint;
  f.message = message;
  f.short_message = message;
  return f;
}

}  // namespace

// The hand-built ranks of testdata/job/skewed are one 2-rank job.
TEST_CASE("job assembly: the findings every rank has move into the job's entry, once") {
  const auto digests = digests_of({kSkewed});
  REQUIRE(digests.size() == 2);
  const auto rules = job_rules();
  std::vector<std::vector<ptadvise::Finding>> findings{
      {rank_finding("shared", "Both."), rank_finding("only-0", "Rank 0.")},
      {rank_finding("only-1", "Rank 1."), rank_finding("shared", "Both.")}};
  const auto jobs = ptadvise::assemble_jobs(digests, findings, rules, {});
  REQUIRE(jobs.size() == 1);
  const auto& job = jobs[0];
  CHECK(job.notes.empty());
  CHECK(job.group.members == std::vector<size_t>{0, 1});
  REQUIRE(job.analysis);
  CHECK(job.analysis->aligned_collectives == 4);
  CHECK(job.rules_ran == rules.infos().size());
  // The job rules' findings first, as evaluate_job gives them, then the folded one.
  const auto from_rules = ptadvise::evaluate_job(rules, *job.analysis, pointers(digests));
  REQUIRE_FALSE(from_rules.empty());
  REQUIRE(job.findings.size() == from_rules.size() + 1);
  for (size_t i = 0; i < from_rules.size(); ++i) CHECK(job.findings[i].message == from_rules[i].message);
  CHECK(job.folded_findings == 1);
  const auto& folded = job.findings.back();
  CHECK(folded.message == "Both. (on all 2 ranks)");
  CHECK(folded.short_message == "Both. (all 2 ranks)");
  CHECK(folded.ranks == std::vector<int>{0, 1});
  CHECK(folded.trace_path == job.group.name);
  CHECK_FALSE(folded.trace_rank.has_value());
  // Each rank keeps what only it has.
  REQUIRE(findings[0].size() == 1);
  CHECK(findings[0][0].fingerprint == "only-0");
  REQUIRE(findings[1].size() == 1);
  CHECK(findings[1][0].fingerprint == "only-1");

  // The selection applies to job rules as to per-trace rules: skipped rules do not run, severities override.
  ptadvise::EvaluateOptions selection;
  selection.skip = {from_rules.front().rule_id};
  const std::string kept = from_rules.back().rule_id;
  if (kept != from_rules.front().rule_id) selection.severities[kept] = ptadvise::Severity::Error;
  findings = {{}, {}};
  const auto selected = ptadvise::assemble_jobs(digests, findings, rules, selection);
  REQUIRE(selected.size() == 1);
  CHECK(selected[0].rules_ran == rules.infos().size() - 1);
  CHECK(selected[0].folded_findings == 0);
  for (const auto& f : selected[0].findings) {
    CHECK(f.rule_id != from_rules.front().rule_id);
    if (f.rule_id == kept) CHECK(f.severity == ptadvise::Severity::Error);
  }
}

TEST_CASE("job assembly: traces with ranks that are not one job each stand alone, with a note") {
  const auto rules = job_rules();
  std::vector<ptadvise::RankDigest> quiet(2);  // ranks in their names, nothing distributed
  for (int i = 0; i < 2; ++i) {
    quiet[static_cast<size_t>(i)].path = "/runs/a/rank-" + std::to_string(i) + ".json";
    quiet[static_cast<size_t>(i)].rank = i;
  }
  std::vector<std::vector<ptadvise::Finding>> findings{{rank_finding("shared", "Both.")},
                                                       {rank_finding("shared", "Both.")}};
  auto jobs = ptadvise::assemble_jobs(quiet, findings, rules, {});
  REQUIRE(jobs.size() == 1);
  CHECK_FALSE(jobs[0].analysis.has_value());
  CHECK(jobs[0].findings.empty());
  REQUIRE(jobs[0].notes.size() == 1);
  CHECK(jobs[0].notes[0].path == "/runs/a");
  CHECK(jobs[0].notes[0].text ==
        "2 traces with ranks in their names but no collectives and no distributed info: checked each on its own");
  CHECK(findings[0].size() == 1);  // nothing folded
  CHECK(findings[1].size() == 1);

  // Ranks of a 2-rank job that share no collective are two runs.
  auto unrelated = digests_of({kSkewed});
  REQUIRE(unrelated.size() == 2);
  for (auto& call : unrelated[1].collectives) call.type = CollectiveType::AllGather;
  jobs = ptadvise::assemble_jobs(unrelated, findings, rules, {});
  REQUIRE(jobs.size() == 1);
  CHECK_FALSE(jobs[0].analysis.has_value());
  REQUIRE(jobs[0].notes.size() == 1);
  CHECK(jobs[0].notes[0].text == "2 traces with ranks share no collective: not the ranks of one job; checked each on its own");
  CHECK(findings[0].size() == 1);
}

TEST_CASE("job assembly: one rank of a larger job alone gets the lone-rank rules only") {
  const auto rules = job_rules();
  size_t lone_rules = 0;
  for (const auto& info : rules.infos()) lone_rules += rules.judges_lone_rank(info.id) ? 1 : 0;
  REQUIRE(lone_rules > 0);
  auto digests = digests_of({kSkewed});
  const auto lone = ptadvise::evaluate_lone_rank(digests[0], rules, {});
  CHECK(lone.rules_ran == lone_rules);
  REQUIRE_FALSE(lone.findings.empty());  // 50 of its 100 ms of all-reduce per step are exposed
  for (const auto& f : lone.findings) {
    CHECK(rules.judges_lone_rank(f.rule_id));
    CHECK(f.trace_path == digests[0].path);
    CHECK(f.trace_rank == 0);
    const std::string tail = " Measured on this rank alone (the other ranks of the 2-rank job were not given): "
                             "time it waited for them counts as communication.";
    REQUIRE(f.message.size() > tail.size());
    CHECK(f.message.substr(f.message.size() - tail.size()) == tail);
  }
  ptadvise::EvaluateOptions only_straggler;
  only_straggler.only = {"PTA202"};  // needs the other ranks
  CHECK(ptadvise::evaluate_lone_rank(digests[0], rules, only_straggler).rules_ran == 0);
  digests[0].rank.reset();  // no rank to name
  CHECK(ptadvise::evaluate_lone_rank(digests[0], rules, {}).rules_ran == 0);
  digests[1].collectives.clear();  // no job to speak of
  CHECK(ptadvise::evaluate_lone_rank(digests[1], rules, {}).findings.empty());
  CHECK(ptadvise::evaluate_lone_rank(digests[1], rules, {}).rules_ran == 0);
}
