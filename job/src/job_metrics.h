// Internal to job/: the rows job rules look at (the job, each rank, each collective type) and their
// metrics by name. docs/RULE_LANGUAGE.md "Job scope" lists every metric; keep both in step.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ptadvise/job.h"

namespace ptadvise::job_detail {

enum class RowKind { Job, Rank, CollectiveType };

struct Row {
  std::vector<int> ranks;                     // the ranks it concerns
  std::map<std::string, double> values;       // metric -> value (NaN: not measurable on this job)
  std::map<std::string, std::string> texts;   // `cause`, `type`
  std::string site;                           // names what the finding is about, for fingerprints
};

const std::vector<std::string>& metric_names(RowKind kind);
std::vector<Row> rows(RowKind kind, const JobAnalysis& job, const std::vector<const RankDigest*>& ranks);
// Several rank rows as one: the union of their ranks, the mean of each metric.
Row fold_rows(const std::vector<Row>& rows);

// Peak bus bandwidth (GB/s, per GPU and direction) of the device's fastest link, from its name; nullopt
// when the device is unknown.
std::optional<double> link_peak_gbps(const std::string& device);

}  // namespace ptadvise::job_detail
