// Internal to advisor/: the per-rank part of `check` (load, analyse, evaluate, reduce to a digest — in
// parallel, each timeline dropped once reduced) and the report entries of distributed jobs (job/ decides
// what they hold).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "progress.h"
#include "ptadvise/advisor.h"

namespace ptadvise::check_detail {

struct RankResult {
  TraceReport trace;   // findings after suppressions, not yet ranked
  RankDigest digest;
  std::string error;   // a fatal load error, or a trace mostly lost without --accept-partial (the check stops)
  bool not_a_trace = false;  // the error says the file is another JSON document (LoadError::not_a_trace)
  size_t suppressed = 0;
};

// What checking one rank needs, shared by the threads.
struct RankCheck {
  const RuleSet& rules;
  const EvaluateOptions& selection;
  const KernelClassifier& kernels;
  const std::string& source_root;
  bool accept_partial = false;
  bool whatif = true;  // replay the steps (docs/WHATIF.md); off: predictions from the ledger alone
  bool critical_path_spans = false;  // StepPrediction::critical_path, for the annotated trace (--annotate)
};

// The threads the loader of a rank about to be checked gets: its share of the cores among the ranks
// checked at once — `workers` while at least as many files are left (this one included), and at least the
// `running` ones (this one included) at the tail. With every loader taking all the cores, two ranks on two
// cores ran four parsing threads and lost a quarter of their time to the oversubscription.
unsigned loader_threads(unsigned cores, unsigned workers, size_t files_left, unsigned running);

// Checks the trace files, `threads` at a time (0: one per usable core), each rank's loader with its share
// of the cores (loader_threads), reporting each file done to `progress`. Results come in file order.
std::vector<RankResult> check_files(const std::vector<std::string>& files, const RankCheck& check, unsigned threads,
                                    Progress& progress);

// The per-trace report a digest stands for (without the summary, which digests do not carry).
TraceReport trace_from_digest(const RankDigest& digest);

// Suppressions and ranking of one trace's raw findings.
void finish_trace(TraceReport& trace, const std::string& source_root, size_t& suppressed);

// The report's entries: the jobs the traces form (job.h, assemble_jobs), each job's entry (its table, job
// findings and the per-rank findings every rank shares) before its ranks, and the lone-rank findings of a
// trace standing alone. `traces` and `digests` are parallel; notes go to `err` as warnings.
std::vector<TraceReport> report_jobs(std::vector<TraceReport> traces, const std::vector<RankDigest>& digests,
                                     const JobRuleSet& job_rules, const EvaluateOptions& selection,
                                     std::ostream& err);

}  // namespace ptadvise::check_detail
