// Distributed jobs: the collectives of one rank, the per-rank digest (the small summary of one rank that
// crosses machines), which traces form a job, the alignment of ranks and the job rules (rules.d/job/).
// Uses trace/ (one trace) and the finding structs of rules/; knows nothing of printers.
// docs/DISTRIBUTED.md describes the model.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/finding.h"
#include "ptadvise/rules.h"

namespace ptadvise {


// ---------------------------------------------------------------------------------------------------
// Collectives

enum class CollectiveType : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv, Barrier, Other };
std::string_view to_string(CollectiveType type);  // "all_reduce", "all_gather", ...

// What one name says about communication: the collective a GPU kernel (NCCL/RCCL of every era, DeepEP /
// NVSHMEM) or a host record (`gloo:all_reduce`, `nccl:all_reduce`, `c10d::allreduce_`) performs; nullopt
// when the name is not communication. The one place that knows communication names.
std::optional<CollectiveType> communication_kernel(std::string_view kernel_name);
std::optional<CollectiveType> communication_host_op(std::string_view op_name);
// `Collective name` values ("allreduce", "_allgather_base", "all_to_allv", "send") to a type.
CollectiveType collective_type_from_text(std::string_view text);

// nccl-tests: busbw = algbw * factor, n ranks in the group (1 when n < 2).
double bus_bandwidth_factor(CollectiveType type, int ranks);

// One collective as one rank saw it.
struct CollectiveCall {
  CollectiveType type = CollectiveType::Other;
  std::string group;        // process group name ("" = the default group)
  int64_t seq = -1;         // sequence number when the trace records one
  int64_t step = -1;        // number of the steady step it belongs to (-1 outside steady steps)
  uint32_t order = 0;       // position among this group's collectives of its type in the step
  int64_t start_ns = 0;     // absolute (trace origin + ts)
  int64_t end_ns = 0;
  int64_t bytes = 0;        // message size as nccl-tests counts it; 0 when the trace does not say
  int32_t group_size = 0;   // 0 when unknown
  bool on_device = false;   // a GPU kernel (else a host-side collective: gloo, or host records only)
  EventIndex event = kNone; // the event in the analysed trace (this process only: not in a digest file)
  // The stretch before this collective (since the rank's previous collective ended, or the step began):
  // what the rank did in it. Used to say what made a late rank late.
  int64_t before_ns = 0;
  int64_t before_compute_ns = 0;      // compute (GPU kernels; CPU ops on a host-only trace)
  int64_t before_data_loader_ns = 0;  // waiting for a batch
  int64_t before_copy_ns = 0;         // GPU copies and memsets
  int64_t before_host_ns = 0;         // other host ops on the main thread
};

// Per collective type on one rank, over the steady steps.
struct CollectiveTypeStats {
  CollectiveType type = CollectiveType::Other;
  double count_per_step = 0;
  double ms_per_step = 0;
  double bytes_per_step = 0;   // collectives whose size is known
  double algbw_gbps = 0;       // bytes / time over the sized collectives (GB/s, 1e9), 0 when unknown
  double busbw_gbps = 0;       // algbw * nccl-tests factor
  int32_t group_size = 0;      // largest group seen
};

// The rank's step replay as a function of when its collectives end (whatif::join_model), so that the job
// replays its ranks together: a fix on one rank shortens the others' waits (docs/WHATIF.md, "Jobs").
// Times are absolute, as CollectiveCall's; JoinTerm::source and `arrival` index RankDigest::collectives.
struct RankJoin {
  bool available = false;
  std::vector<uint8_t> in_window;           // per collective: in the replayed steps
  std::vector<int64_t> step_numbers;        // per model step: Step::number
  std::vector<uint8_t> measured;            // per model step: its period is replayed (else the step after)
  std::vector<int64_t> measured_period_ns;  // per model step
  whatif::JoinModel unchanged;              // the rank as recorded
  whatif::JoinModel fixed;                  // with the fixes of all its findings together
  double predicted_step_ms = 0;             // this rank's all-fixes prediction, replayed alone
  bool exact = true;                        // both models pass their self-check (whatif::JoinModel::exact)
};

// ---------------------------------------------------------------------------------------------------
// The per-rank digest: everything the job analysis and the job report need from one rank, a few KB.

struct RankDigest {
  // Identity
  std::string path;
  std::optional<int> rank;
  bool rank_from_trace = false;  // distributedInfo.rank (else from the file name)
  int world_size = 1;            // distributedInfo.world_size (1 when absent)
  std::string backend;           // distributedInfo.backend ("nccl", "gloo", ...)
  std::string device;            // device name, empty when unknown
  bool has_gpu = false;
  // The per-rank report (what `check` prints for this trace)
  size_t step_count = 0;
  std::string step_note;
  double gpu_busy_pct = 0;
  std::vector<std::string> warnings;  // the report's: the loader's, the partial-trace problem, unexplained idle
  // The partial-trace problem (more than 5% of the trace unreadable) it was checked with under
  // --accept-partial; empty when the trace was read whole. `merge` refuses such a digest unless it is
  // given --accept-partial too.
  std::string partial;
  Coverage coverage;
  std::vector<Finding> findings;  // raw findings of the per-trace rules, before suppressions and ranking
  // Per steady step, ms
  size_t steady_steps = 0;
  // The number of the last steady step when it holds fewer collectives than each of the others: the
  // profiler stopped before a helper thread's record of its collective (gloo's) was kept. -1: none cut.
  int64_t collectives_cut_step = -1;
  double step_ms = 0;            // mean period of the steady steps
  double compute_ms = 0;         // compute kernels (host-only traces: CPU ops outside communication)
  double communication_ms = 0;   // union of collective time
  double exposed_comm_ms = 0;    // communication with no compute running on the device
  double data_loader_ms = 0;     // GPU idle charged to the data loader (host-only traces: waiting for batches)
  double idle_ms = 0;            // GPU idle in the step windows (host-only traces: 0)
  double overlap_pct = 0;        // share of communication time overlapped by compute
  // Patterns of data-parallel training, per steady step
  double forwards_per_step = 0;        // DistributedDataParallel.forward calls
  double reduce_rounds_per_step = 0;   // forwards followed by gradient all-reduces before the next forward
  double buffer_broadcasts_per_step = 0;  // DDP buffer broadcasts (broadcast collectives inside the forward)
  std::vector<CollectiveTypeStats> by_type;
  std::vector<CollectiveCall> collectives;  // steady steps only, in start order
  RankJoin join;
};

struct DigestError {
  std::string message;  // one line: file, position, what was expected
};

// Builds the digest of one analysed rank; `findings` are its per-trace findings.
RankDigest make_digest(const Analysis& analysis, std::vector<Finding> findings);

// Fills digest.join from the rank's what-if (its graph, and the fixes of `findings` together), while the
// analysis is alive; `prediction` is the rank's own (WhatIf::predict_steps of the same findings), and
// `fixed_replay` the replay predict_steps made of them, when kept (else it is replayed again).
void add_join(RankDigest& digest, const Analysis& analysis, const WhatIf& whatif, const std::vector<Finding>& findings,
              const StepPrediction& prediction, const whatif::ReplayResult* fixed_replay = nullptr);

void write_digest(const RankDigest& digest, std::ostream& out);  // JSON
std::variant<RankDigest, DigestError> parse_digest(std::string_view json, const std::string& label);
std::variant<RankDigest, DigestError> read_digest(const std::string& path);

// ---------------------------------------------------------------------------------------------------
// Which traces form a job

struct JobGroup {
  std::vector<size_t> members;  // indices into the digests, sorted by rank
  std::string name;             // the run's directory
  std::string note;             // why traces were not taken as one job, for the user; empty when fine
};

// Groups ranks into jobs: traces with a rank (distributedInfo, else the file name) in the same directory
// with the same world size and backend are one job when their ranks are distinct. Every other trace forms
// a group of its own.
std::vector<JobGroup> group_jobs(const std::vector<RankDigest>& digests);

// ---------------------------------------------------------------------------------------------------
// Across the ranks of one job

// One collective matched across ranks.
struct AlignedCollective {
  CollectiveType type = CollectiveType::Other;
  std::string group;
  int64_t step = -1;
  uint32_t order = 0;
  double skew_ms = 0;          // last arrival - first arrival (clock-aligned)
  int last_rank = -1;          // the rank that arrived last
  double last_late_ms = 0;     // last arrival - the median arrival of the other ranks
  double wait_ms_total = 0;    // time the other ranks spent inside it before the last one arrived
};

struct RankJobStats {
  int rank = -1;
  size_t digest = 0;            // index into the job's digests
  double clock_offset_ms = 0;   // subtracted from this rank's timestamps to align it with the first rank
  double wait_ms = 0;           // per step: time inside collectives before the last rank arrived
  double last_pct = 0;          // % of aligned collectives at which this rank arrived last
  double late_ms = 0;           // per step: sum of last_late_ms over the collectives it arrived last at
  double caused_wait_ms = 0;    // per step: the wait of each other rank (mean) in collectives it arrived last at
  double caused_wait_share_pct = 0;  // its share of all the waiting in the job's collectives
  double straggler_steps_pct = 0;    // % of steps in which the waiting it caused was the largest of any rank
  std::map<CollectiveType, double> wait_by_type;  // per step, wait_ms by collective type
  std::string late_cause;       // compute, data-loader, copies, host, untraced: what filled its stretch
  double late_cause_ms = 0;     // per step: how much longer that stretch was than the median rank's
  size_t compared_steps = 0;    // the steps the figures "per step" above are over (JobAnalysis::uncompared_steps)
};

// The job's steps replayed with its ranks joined at their collectives (docs/WHATIF.md, "Jobs"): a
// collective ends when its last rank has arrived plus its transfer time (the shortest any rank measured).
struct JobPrediction {
  bool available = false;
  size_t steps = 0;                // steps whose periods are joined
  size_t joined_collectives = 0;   // per replay: collectives matched on every rank inside their replays
  double measured_step_ms = 0;     // mean over those steps of the slowest rank's measured period
  double replayed_step_ms = 0;     // the same, replayed joined, unchanged
  double predicted_step_ms = 0;    // with every rank's fixes; measured - (replayed - replayed with fixes)
  double ranks_alone_step_ms = 0;  // the slowest rank's own all-fixes prediction (each rank replayed alone)
  std::string note;                // why there is no joined replay, or how far it is from the measured
};

struct CollectiveMatch;  // job/src/matching.h

struct JobAnalysis {
  std::string name;
  int world_size = 1;            // as the traces say
  std::vector<int> ranks;        // ranks present, sorted
  size_t aligned_collectives = 0;
  size_t unmatched_collectives = 0;  // collectives not present on every rank
  // Steady steps left out of the per-step wait statistics: some rank has a collective in them that is not
  // present on every rank, or a rank's last step lost its collective's record (collectives_cut_step), so
  // who waited in them is unknown.
  size_t uncompared_steps = 0;
  bool by_sequence = false;      // matched by sequence numbers (else by step and order)
  std::vector<RankJobStats> per_rank;  // same order as the digests
  std::vector<AlignedCollective> collectives;  // top by skew (at most 20)
  double step_ms = 0;            // mean of the ranks' step periods
  double compute_imbalance_pct = 0;  // (max - min) / max of per-rank compute per step
  int slowest_compute_rank = -1;
  double compute_max_ms = 0, compute_min_ms = 0, compute_median_ms = 0;
  JobPrediction prediction;
  // The collectives matched on every rank and the ranks' clock offsets, kept for the job findings'
  // joined replays (a transform that names ranks: predict_job_finding). Null for one rank.
  std::shared_ptr<const CollectiveMatch> match;
};

JobAnalysis analyze_job(const std::vector<const RankDigest*>& ranks, const std::string& name);

// ---------------------------------------------------------------------------------------------------
// Job rules: YAML files with `scope: job` (docs/RULE_LANGUAGE.md, "Job scope")

struct JobRuleSetImpl;
class JobRuleSet {
 public:
  JobRuleSet();
  ~JobRuleSet();
  JobRuleSet(JobRuleSet&&) noexcept;
  JobRuleSet& operator=(JobRuleSet&&) noexcept;
  const std::vector<RuleInfo>& infos() const;
  const RuleInfo* find(std::string_view id_or_name) const;
  // Whether rule `id` also runs on the trace of one rank of a larger job (`lone_rank: true`): its metrics
  // mean something without the other ranks.
  bool judges_lone_rank(std::string_view id) const;
  const JobRuleSetImpl& impl() const { return *impl_; }
  JobRuleSetImpl& impl() { return *impl_; }

 private:
  std::unique_ptr<JobRuleSetImpl> impl_;
};

struct JobRuleError {
  std::string message;
};

// Loads the `scope: job` rule files below each directory (other rule files are left to rules/).
std::variant<JobRuleSet, JobRuleError> load_job_rules(const std::vector<std::string>& directories);
std::variant<JobRuleSet, JobRuleError> load_job_rule_text(std::string_view yaml, const std::string& file);

// A fixture of a job rule: a directory (or files) of ranks, and what the rule reports on it.
struct JobRuleTest {
  std::vector<std::string> traces;  // absolute paths
  size_t findings = 0;
  std::vector<std::pair<std::string, double>> numbers;  // of the first finding (saving_ms_per_step, ...)
  std::vector<int> ranks;           // of the first finding, when given
  std::string message_contains;
  std::map<std::string, double> thresholds;
};
const std::vector<JobRuleTest>& job_rule_tests(const JobRuleSet& rules, size_t index);

// Runs the job rules on one job. Findings carry the ranks they concern (Finding::ranks).
std::vector<Finding> evaluate_job(const JobRuleSet& rules, const JobAnalysis& job,
                                  const std::vector<const RankDigest*>& ranks,
                                  const std::map<std::string, std::map<std::string, double>>& thresholds = {},
                                  const std::vector<std::string>& skip = {});

// ---------------------------------------------------------------------------------------------------
// The jobs of a check: which checked traces are the ranks of one job and what each job finds

struct JobNote {
  std::string path;  // the trace or the directory it is about
  std::string text;  // why traces were not taken as one job, for the user
};

struct CheckedJob {
  JobGroup group;
  std::vector<JobNote> notes;
  // Set when the members are the ranks of one job; else each member stands alone (evaluate_lone_rank).
  std::optional<JobAnalysis> analysis;
  // The job's findings, not ranked: the job rules' findings, then the per-rank findings every rank has (same
  // rule and site), each folded into one "on all N ranks" finding.
  std::vector<Finding> findings;
  size_t folded_findings = 0;  // of `findings`, the folded ones
  size_t rules_ran = 0;        // job rules selected to run on the job
};

// Groups the checked ranks into jobs and evaluates the selected job rules on each. `rank_findings[i]` are the
// ranked, fingerprinted per-trace findings of `digests[i]`; a finding folded into its job's leaves them.
std::vector<CheckedJob> assemble_jobs(const std::vector<RankDigest>& digests,
                                      std::vector<std::vector<Finding>>& rank_findings, const JobRuleSet& rules,
                                      const EvaluateOptions& selection);

struct LoneRankFindings {
  std::vector<Finding> findings;  // not ranked
  size_t rules_ran = 0;
};

// A trace standing alone that runs collectives is one recorded rank of a larger job: the selected job rules
// whose metrics mean something on one rank (`lone_rank: true`: exposed communication, DDP patterns) run on it.
// Nothing runs on a trace without collectives or without a rank.
LoneRankFindings evaluate_lone_rank(const RankDigest& digest, const JobRuleSet& rules,
                                    const EvaluateOptions& selection);

}  // namespace ptadvise
