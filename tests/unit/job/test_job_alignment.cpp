// job/src/alignment.cpp on the hand-built ranks of testdata/job/skewed: clocks aligned on collective ends,
// exact skews and waits, the steps the waits per step leave out, and hostile times that must saturate.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "job_fixtures.h"
#include "ptadvise/job.h"

namespace {

using ptadvise::testing::digests_of;
using ptadvise::testing::job_rules;
using ptadvise::testing::kSkewed;
using ptadvise::testing::pointers;
namespace fs = std::filesystem;

}  // namespace

TEST_CASE("job: ranks are aligned on collective ends; skew, last rank and waits are exact") {
  auto digests = digests_of({kSkewed});
  const auto job = ptadvise::analyze_job(pointers(digests), kSkewed);
  CHECK(job.aligned_collectives == 4);
  CHECK(job.unmatched_collectives == 0);
  CHECK_FALSE(job.by_sequence);
  CHECK(job.per_rank[1].clock_offset_ms == doctest::Approx(5000));
  REQUIRE(job.collectives.size() == 4);
  CHECK(job.collectives[0].skew_ms == doctest::Approx(20));
  CHECK(job.collectives[0].last_rank == 1);
  CHECK(job.collectives[0].wait_ms_total == doctest::Approx(20));
  CHECK(job.per_rank[0].wait_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].wait_ms == doctest::Approx(0));
  CHECK(job.per_rank[1].last_pct == doctest::Approx(100));
  CHECK(job.per_rank[1].late_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].caused_wait_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].straggler_steps_pct == doctest::Approx(100));
  CHECK(job.per_rank[1].late_cause == "compute");  // 70 ms of compute before it arrives, against 50 ms
  CHECK(job.per_rank[1].late_cause_ms == doctest::Approx(20));
  CHECK(job.compute_imbalance_pct == doctest::Approx(0));
}

// The last step's record on one rank lost (the profiler stopped before a helper thread closed it): the
// waits per step are over the three steps whose collectives matched, not thinned out over all four.
TEST_CASE("job: a step with a collective not on every rank is left out of the waits per step") {
  auto digests = digests_of({kSkewed});
  REQUIRE(digests[0].collectives.size() == 4);
  digests[0].collectives.pop_back();
  auto job = ptadvise::analyze_job(pointers(digests), kSkewed);
  CHECK(job.aligned_collectives == 3);
  CHECK(job.unmatched_collectives == 1);
  CHECK(job.uncompared_steps == 1);
  CHECK(job.per_rank[0].wait_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].late_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].caused_wait_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].late_cause_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].last_pct == doctest::Approx(100));

  // A rank with an extra collective in every step: no step would be left, so every step counts.
  digests = digests_of({kSkewed});
  const auto extra = digests[1].collectives;
  for (auto call : extra) {
    call.group = "metrics";
    digests[1].collectives.push_back(call);
  }
  job = ptadvise::analyze_job(pointers(digests), kSkewed);
  CHECK(job.aligned_collectives == 4);
  CHECK(job.unmatched_collectives == 4);
  CHECK(job.uncompared_steps == 0);
  CHECK(job.per_rank[0].wait_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].late_ms == doctest::Approx(20));
}

// The last step's collective lost on every rank (torch.profiler's stop did not keep a helper thread's gloo
// record): no rank has a collective the others lack, but each digest marks its last step as cut, and the
// waits per step are over the three steps that hold a collective.
TEST_CASE("job: a last step whose collective the profiler's stop lost is left out of the waits per step") {
  const fs::path dir = fs::temp_directory_path() / ("ptadvise-cut-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string rank : {"0", "1"}) {
    std::ifstream in(kSkewed + "/rank-" + rank + ".json");
    nlohmann::json trace = nlohmann::json::parse(in);
    auto& events = trace.at("traceEvents");
    const auto before = events.size();
    for (auto it = events.begin(); it != events.end(); ++it) {
      if (it->value("cat", "") == "kernel" && it->value("args", nlohmann::json::object()).value("correlation", 0) == 1008) {
        events.erase(it);
        break;
      }
    }
    REQUIRE(events.size() + 1 == before);
    std::ofstream(dir / ("rank-" + rank + ".json")) << trace.dump();
  }
  auto digests = digests_of({dir.string()});
  REQUIRE(digests.size() == 2);
  CHECK(digests[0].collectives.size() == 3);
  CHECK(digests[0].collectives_cut_step == 4);
  CHECK(digests[1].collectives_cut_step == 4);
  CHECK(digests_of({kSkewed})[0].collectives_cut_step == -1);
  const auto job = ptadvise::analyze_job(pointers(digests), dir.string());
  CHECK(job.unmatched_collectives == 0);
  CHECK(job.uncompared_steps == 1);
  CHECK(job.per_rank[0].wait_ms == doctest::Approx(20));
  CHECK(job.per_rank[1].late_ms == doctest::Approx(20));
  CHECK(job.per_rank[0].compared_steps == 3);
  // exposed-communication subtracts the wait from a rank's own exposed time, which is over all 4 steps
  // (rank 0: 3 x 50 ms / 4): the wait over the same steps (3 x 20 / 4) leaves 22.5 ms, not 37.5 - 20; rank 1
  // waits for nobody (37.5 ms). The finding covers both ranks with their mean: 30 ms (27.5 mixing the steps).
  const auto findings = ptadvise::evaluate_job(job_rules(), job, pointers(digests));
  bool exposed = false;
  for (const auto& finding : findings) {
    if (finding.rule_id != "PTA201") continue;
    exposed = true;
    CHECK(finding.ranks == std::vector<int>{0, 1});
    CHECK(finding.saving_ms_per_step == doctest::Approx(30));
  }
  CHECK(exposed);
  // The field survives the digest's round trip.
  std::ostringstream written;
  ptadvise::write_digest(digests[0], written);
  auto reread = ptadvise::parse_digest(written.str(), "cut.json");
  REQUIRE(std::holds_alternative<ptadvise::RankDigest>(reread));
  CHECK(std::get<ptadvise::RankDigest>(reread).collectives_cut_step == 4);
  fs::remove_all(dir);
}

// A damaged or hostile digest may hold any int64 as a time: the differences saturate instead of wrapping
// into negative skews and waits (and undefined behaviour).
TEST_CASE("job: times at the ends of int64 give saturated figures, never wrapped ones") {
  auto digests = digests_of({kSkewed});
  constexpr int64_t kFar = 9'000'000'000'000'000'000;
  for (auto& call : digests[0].collectives) {
    call.start_ns = -kFar;
    call.end_ns = kFar;
    call.before_compute_ns = kFar;
    call.before_copy_ns = kFar;
  }
  for (auto& call : digests[1].collectives) {
    call.start_ns = kFar - 1'000'000;
    call.end_ns = kFar;
  }
  const auto job = ptadvise::analyze_job(pointers(digests), kSkewed);
  REQUIRE(job.aligned_collectives == 4);
  REQUIRE(!job.collectives.empty());
  CHECK(job.collectives[0].skew_ms > 9e12);  // saturated at INT64_MAX ns, not wrapped below zero
  CHECK(job.collectives[0].last_rank == 1);
  CHECK(job.per_rank[0].wait_ms > 9e12);
  CHECK(job.per_rank[1].late_ms > 9e12);
  CHECK(job.per_rank[1].wait_ms == doctest::Approx(0));
}
