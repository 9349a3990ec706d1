// Internal to the job tests: digests of trace files, the shipped job rules, and the hand-built ranks of
// testdata/job/skewed (testdata/make_job_traces.py).
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ptadvise/job.h"
#include "ptadvise/loader.h"

namespace ptadvise::testing {

inline const std::string kRulesDir = PTADVISE_SOURCE_DIR "/rules.d";
inline const std::string kSkewed = PTADVISE_SOURCE_DIR "/testdata/job/skewed";

// The digest of one trace file, its rank from the file name when the trace does not say.
inline RankDigest digest_of(const std::string& path) {
  auto loaded = load_trace_file(path);
  if (auto* error = std::get_if<LoadError>(&loaded)) FAIL(error->message);
  Timeline timeline = std::move(std::get<Timeline>(loaded));
  if (!timeline.rank) timeline.rank = rank_from_file_name(std::filesystem::path(path).filename().string());
  Analysis analysis = analyze(timeline);
  return make_digest(analysis, {});
}

// The digests of the trace files found below each input, in order.
inline std::vector<RankDigest> digests_of(const std::vector<std::string>& inputs) {
  std::vector<RankDigest> digests;
  auto listed = list_trace_inputs(inputs);
  if (auto* error = std::get_if<LoadError>(&listed)) FAIL(error->message);
  for (const auto& input : std::get<std::vector<TraceInput>>(listed)) digests.push_back(digest_of(input.path));
  return digests;
}

inline std::vector<const RankDigest*> pointers(const std::vector<RankDigest>& digests) {
  std::vector<const RankDigest*> out;
  for (const auto& d : digests) out.push_back(&d);
  return out;
}

// The job rules of rules.d.
inline JobRuleSet job_rules() {
  auto loaded = load_job_rules({kRulesDir});
  if (auto* error = std::get_if<JobRuleError>(&loaded)) FAIL(error->message);
  return std::move(std::get<JobRuleSet>(loaded));
}

}  // namespace ptadvise::testing
