// The per-rank part of `check` and the report entries of distributed jobs (check_ranks.h).
#include "check_ranks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "format.h"
#include "ptadvise/cores.h"
#include "ptadvise/loader.h"

namespace ptadvise::check_detail {

namespace {

// What of a trace's report its digest carries, listed once for both directions: check_file makes the digest
// from the report (carry_report) and a checked digest stands for the report (trace_from_digest: merge,
// digests as input). `field` gets (report's, digest's, whether the report's value goes into the digest). The
// digest keeps its own step period (the mean of the steady steps it measures, the job's denominator): that
// one only comes back from it. The warnings go both ways, so that a merged report says what check said.
enum class Carried { BothWays, FromDigest };
template <class Report, class Digest, class Field>
void carried_fields(Report& trace, Digest& digest, Field field) {
  field(trace.path, digest.path, Carried::BothWays);
  field(trace.rank, digest.rank, Carried::BothWays);
  field(trace.device, digest.device, Carried::BothWays);
  field(trace.has_gpu, digest.has_gpu, Carried::BothWays);
  field(trace.step_count, digest.step_count, Carried::BothWays);
  field(trace.step_note, digest.step_note, Carried::BothWays);
  field(trace.gpu_busy_pct, digest.gpu_busy_pct, Carried::BothWays);
  field(trace.coverage, digest.coverage, Carried::BothWays);
  field(trace.findings, digest.findings, Carried::BothWays);
  field(trace.step_ms, digest.step_ms, Carried::FromDigest);
  field(trace.warnings, digest.warnings, Carried::BothWays);
}

void carry_report(const TraceReport& trace, RankDigest& digest) {
  carried_fields(trace, digest, [](const auto& from, auto& to, Carried carried) {
    if (carried == Carried::BothWays) to = from;
  });
}

// Work that runs on another thread while this one goes on, when the trace has a core to spare; otherwise
// (or when no thread can be had) it runs in join(). An exception thrown by it there (out of memory) is
// rethrown by join(), on this thread.
class Beside {
 public:
  Beside(bool spare_core, std::function<void()> work) : work_(std::move(work)) {
    if (!spare_core) return;
    try {
      thread_ = std::jthread([this] {
        try {
          work_();
        } catch (...) {
          failure_ = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      // no thread to be had: the work runs in join()
    }
  }
  Beside(const Beside&) = delete;
  Beside& operator=(const Beside&) = delete;
  void join() {
    if (!thread_.joinable()) {
      work_();
      return;
    }
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::function<void()> work_;
  std::exception_ptr failure_;
  std::jthread thread_;  // last: joined before the work is destroyed
};

RankResult check_file(const std::string& path, const RankCheck& check, const LoadOptions& load) {
  RankResult result;
  auto loaded = load_trace_file(path, load);
  if (auto* error = std::get_if<LoadError>(&loaded)) {
    result.error = error->message;
    result.not_a_trace = error->not_a_trace;
    return result;
  }
  Timeline timeline = std::move(std::get<Timeline>(loaded));
  if (!timeline.rank) timeline.rank = rank_from_file_name(std::filesystem::path(path).filename().string());
  std::optional<std::string> partial = partial_trace_problem(timeline);
  if (partial && !check.accept_partial) {
    result.error = *partial;
    return result;
  }
  Analysis analysis = analyze(timeline, check.kernels, load.threads);
  // The summary and the what-if's graph with its unchanged replay do not depend on the findings: with a
  // core to spare they are made beside the rules. Only the rules and the digest fill the analysis's memos
  // (cpu_op_of, user_source), each under its lock; the summary and the what-if read none of them.
  Summary summary;
  std::optional<WhatIf> whatif;
  Beside summary_and_graph(load.threads > 1, [&] {
    summary = summarize(analysis);
    if (check.whatif) whatif.emplace(analysis);
  });
  TraceReport& trace = result.trace;
  EvaluateOptions selection = check.selection;
  selection.predict = false;  // predicted below, with the graph the trace's replay uses
  selection.threads = load.threads;
  trace.findings = evaluate(check.rules, analysis, selection, &trace.coverage);
  summary_and_graph.join();
  trace.path = timeline.path;
  trace.rank = timeline.rank;
  for (const auto& device : summary.devices) {
    if (!device.name.empty()) {
      trace.device = device.name;
      break;
    }
  }
  trace.step_count = summary.step_count;
  trace.step_note = summary.step_note;
  trace.step_ms = summary.step_period_ms;  // the denominator of every finding's saving_pct
  trace.gpu_busy_pct = summary.gpu_busy_pct;
  trace.has_gpu = !analysis.devices.empty();
  trace.warnings = timeline.stats.warnings;
  if (partial) trace.warnings.push_back(*partial);
  for (const std::string& note : unexplained_idle_notes(summary)) trace.warnings.push_back(timeline.path + ": " + note);
  if (auto note = missing_gpu_activity_note(timeline)) trace.warnings.push_back(timeline.path + ": " + *note);
  for (auto& finding : trace.findings) {
    if (finding.trace_path.empty()) finding.trace_path = timeline.path;
    if (!finding.trace_rank) finding.trace_rank = timeline.rank;
  }
  result.suppressed = apply_suppressions(trace.findings, check.source_root);
  // The digest's own part does not depend on the findings: with a core to spare it is made while the
  // findings are predicted (it reads the analysis and cpu_op_of, whose memo is filled under its lock).
  Beside digest(load.threads > 1, [&] { result.digest = make_digest(analysis, {}); });
  whatif::ReplayResult fixed_replay;  // the replay of every fix, kept for the rank's join model
  if (whatif) {
    // After suppressions: the replays cover the reported findings only. One graph for all of them.
    whatif->predict_findings(trace.findings);
    trace.prediction = whatif->predict_steps(trace.findings, &fixed_replay, check.critical_path_spans);
  } else {
    predict_from_ledger(analysis, trace.findings);
  }
  trace.summary = std::move(summary);
  digest.join();
  if (whatif) add_join(result.digest, analysis, *whatif, trace.findings, trace.prediction, &fixed_replay);
  carry_report(trace, result.digest);
  if (partial) result.digest.partial = *partial;
  return result;  // the timeline and its analysis are dropped here: only the report and the digest stay
}

std::string collective_label(const AlignedCollective& c) {
  std::string label(to_string(c.type));
  if (!c.group.empty()) label += " (group " + c.group + ")";
  return label;
}

}  // namespace

unsigned loader_threads(unsigned cores, unsigned workers, size_t files_left, unsigned running) {
  // Counted from the files left, not only from the workers already running, which race at the start.
  const unsigned at_once = std::max(running, static_cast<unsigned>(std::min<size_t>(workers, files_left)));
  return std::max(1u, cores / std::max(1u, at_once));
}

std::vector<RankResult> check_files(const std::vector<std::string>& files, const RankCheck& check, unsigned threads,
                                    Progress& progress) {
  std::vector<RankResult> results(files.size());
  const unsigned cores = usable_cores();
  if (threads == 0) threads = cores;
  threads = static_cast<unsigned>(std::min<size_t>(threads, files.size()));
  std::atomic<size_t> next{0};
  std::atomic<unsigned> running{0};  // ranks being checked, for loader_threads
  // Progress in bytes of the files as stored: a file being parsed counts the share of it parsed so far.
  std::vector<uint64_t> file_bytes(files.size(), 0), bytes_read(files.size(), 0);
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(files[i], ec);
    file_bytes[i] = ec ? 0 : size;
    total_bytes += file_bytes[i];
  }
  const auto arg_keys = args_to_keep(&check.rules);
  std::mutex counting;
  size_t done = 0;
  uint64_t bytes_done = 0;
  auto advance = [&](size_t i, uint64_t read, bool finished) {
    std::lock_guard lock(counting);
    bytes_done += read - std::min(read, bytes_read[i]);
    bytes_read[i] = std::max(bytes_read[i], read);
    if (finished) ++done;
    progress.update(done, bytes_done);
  };
  progress.start("checking", files.size() == 1 ? "trace" : "traces", files.size(), total_bytes);
  // An exception (out of memory) escaping a worker thread would abort the process: it is carried over
  // and rethrown here, where the command's own handling turns it into one line and exit 2.
  std::mutex failing;
  std::exception_ptr failure;
  auto work = [&] {
    try {
      for (size_t i = next++; i < files.size(); i = next++) {
        LoadOptions load;
        load.arg_keys = arg_keys;
        load.threads = loader_threads(cores, threads, files.size() - i, ++running);
        load.on_bytes_parsed = [&, i](uint64_t parsed, uint64_t size) {
          if (size > 0) advance(i, static_cast<uint64_t>(static_cast<double>(file_bytes[i]) * parsed / size), false);
        };
        results[i] = check_file(files[i], check, load);
        --running;
        advance(i, file_bytes[i], true);
      }
    } catch (...) {
      std::lock_guard lock(failing);
      if (!failure) failure = std::current_exception();
      next = files.size();  // the other workers stop after their current file
    }
  };
  {
    std::vector<std::jthread> pool;  // joined when the block ends, also when the main thread's work throws
    for (unsigned t = 1; t < threads; ++t) {
      try {
        pool.emplace_back(work);
      } catch (...) {
        break;  // no thread to be had (memory or process limits): fewer workers
      }
    }
    work();
  }
  progress.finish();
  if (failure) std::rethrow_exception(failure);
  return results;
}

TraceReport trace_from_digest(const RankDigest& digest) {
  TraceReport trace;
  carried_fields(trace, digest, [](auto& to, const auto& from, Carried) { to = from; });
  return trace;
}

void finish_trace(TraceReport& trace, const std::string& source_root, size_t& suppressed) {
  suppressed += apply_suppressions(trace.findings, source_root);
  rank_findings(trace.findings);
  trace.recoverable_ms = recoverable_ms_per_step(trace.findings, trace.step_ms);
}

namespace {

// A trace standing alone that is one recorded rank of a larger job: the lone-rank job rules' findings join
// its own (job.h, evaluate_lone_rank).
void add_lone_rank_findings(TraceReport& trace, const RankDigest& digest, const JobRuleSet& job_rules,
                            const EvaluateOptions& selection) {
  LoneRankFindings lone = evaluate_lone_rank(digest, job_rules, selection);
  trace.coverage.ran += lone.rules_ran;
  if (lone.findings.empty()) return;
  trace.prediction.ledger_only += lone.findings.size();  // job rules declare no transform: not in the all-fixes replay
  for (auto& finding : lone.findings) trace.findings.push_back(std::move(finding));
  rank_findings(trace.findings);
  trace.recoverable_ms = recoverable_ms_per_step(trace.findings, trace.step_ms);
}

// The report entry of a job: its table and its findings.
TraceReport job_entry(CheckedJob& checked, const std::vector<RankDigest>& digests) {
  const JobGroup& group = checked.group;
  const JobAnalysis& job = *checked.analysis;
  const RankDigest& first = digests[group.members.front()];
  JobTable table;
  table.directory = group.name;
  table.ranks = group.members.size();
  table.world_size = job.world_size;
  table.backend = first.backend;
  table.aligned_collectives = job.aligned_collectives;
  table.unmatched_collectives = job.unmatched_collectives;
  table.uncompared_steps = job.uncompared_steps;
  table.by_sequence = job.by_sequence;
  table.compute_imbalance_pct = job.compute_imbalance_pct;
  table.folded_findings = checked.folded_findings;
  table.prediction = job.prediction;
  double busy = 0;
  bool has_gpu = false;
  for (size_t r = 0; r < group.members.size(); ++r) {
    const RankDigest& d = digests[group.members[r]];
    const RankJobStats& s = job.per_rank[r];
    table.rows.push_back({s.rank, d.path, d.step_ms, d.compute_ms, d.communication_ms, d.exposed_comm_ms,
                          d.overlap_pct, s.wait_ms, d.data_loader_ms, d.idle_ms, s.last_pct});
    busy += d.gpu_busy_pct;
    has_gpu = has_gpu || d.has_gpu;
  }
  for (size_t k = 0; k < job.collectives.size() && k < 5; ++k) {
    const AlignedCollective& c = job.collectives[k];
    table.worst.push_back({collective_label(c), c.step, c.order, c.skew_ms, c.last_rank, c.wait_ms_total});
  }
  TraceReport entry;
  entry.path = group.name;
  entry.device = first.device;
  entry.step_count = first.step_count;
  entry.step_note = std::to_string(group.members.size()) + " ranks of a " +
                    (job.world_size > 1 ? std::to_string(job.world_size) + "-rank job" : std::string("job"));
  entry.step_ms = job.step_ms;
  entry.gpu_busy_pct = busy / static_cast<double>(group.members.size());
  entry.has_gpu = has_gpu;
  entry.coverage.ran = checked.rules_ran;
  entry.findings = std::move(checked.findings);
  rank_findings(entry.findings);
  entry.recoverable_ms = recoverable_ms_per_step(entry.findings, entry.step_ms);
  entry.job = std::move(table);
  return entry;
}

}  // namespace

std::vector<TraceReport> report_jobs(std::vector<TraceReport> traces, const std::vector<RankDigest>& digests,
                                     const JobRuleSet& job_rules, const EvaluateOptions& selection,
                                     std::ostream& err) {
  std::vector<std::vector<Finding>> findings(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) findings[i] = std::move(traces[i].findings);
  std::vector<CheckedJob> jobs = assemble_jobs(digests, findings, job_rules, selection);
  for (size_t i = 0; i < traces.size(); ++i) traces[i].findings = std::move(findings[i]);
  std::vector<TraceReport> out;
  for (CheckedJob& checked : jobs) {
    for (const JobNote& note : checked.notes) {
      err << "ptadvise: warning: " << format::visible(note.path) << ": " << format::visible(note.text) << "\n";
    }
    const std::vector<size_t>& members = checked.group.members;
    if (!checked.analysis) {
      for (size_t m : members) {
        add_lone_rank_findings(traces[m], digests[m], job_rules, selection);
        out.push_back(std::move(traces[m]));
      }
      continue;
    }
    // Findings folded into the job's entry left its ranks.
    for (size_t m : members) traces[m].recoverable_ms = recoverable_ms_per_step(traces[m].findings, traces[m].step_ms);
    out.push_back(job_entry(checked, digests));
    for (size_t m : members) out.push_back(std::move(traces[m]));
  }
  return out;
}

}  // namespace ptadvise::check_detail
