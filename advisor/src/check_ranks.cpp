// The per-rank part of `check` and the assembly of distributed jobs (check_ranks.h).
#include "check_ranks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "format.h"
#include "ptadvise/loader.h"

namespace ptadvise::check_detail {

namespace {

RankResult check_file(const std::string& path, const RankCheck& check, const LoadOptions& load) {
  RankResult result;
  auto loaded = load_trace_file(path, load);
  if (auto* error = std::get_if<LoadError>(&loaded)) {
    result.error = error->message;
    return result;
  }
  Timeline timeline = std::move(std::get<Timeline>(loaded));
  if (!timeline.rank) timeline.rank = rank_from_file_name(std::filesystem::path(path).filename().string());
  std::optional<std::string> partial = partial_trace_problem(timeline);
  if (partial && !check.accept_partial) {
    result.error = *partial;
    return result;
  }
  Analysis analysis = analyze(timeline, check.kernels);
  Summary summary = summarize(analysis);
  TraceReport& trace = result.trace;
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
  EvaluateOptions selection = check.selection;
  selection.predict = false;  // predicted below, with the graph the trace's replay uses
  trace.findings = evaluate(check.rules, analysis, selection, &trace.coverage);
  for (auto& finding : trace.findings) {
    if (finding.trace_path.empty()) finding.trace_path = timeline.path;
    if (!finding.trace_rank) finding.trace_rank = timeline.rank;
  }
  result.suppressed = apply_suppressions(trace.findings, check.source_root);
  if (check.whatif) {
    // After suppressions: the replays cover the reported findings only. One graph for all of them.
    const WhatIf whatif(analysis);
    whatif.predict_findings(trace.findings);
    trace.prediction = whatif.predict_steps(trace.findings);
  } else {
    predict_from_ledger(analysis, trace.findings);
  }
  trace.summary = std::move(summary);
  result.digest = make_digest(analysis, trace.findings);
  result.digest.device = trace.device;
  result.digest.gpu_busy_pct = trace.gpu_busy_pct;
  result.digest.coverage = trace.coverage;
  result.digest.step_count = trace.step_count;
  result.digest.step_note = trace.step_note;
  return result;  // the timeline and its analysis are dropped here: only the report and the digest stay
}

bool selected(const RuleInfo& info, const EvaluateOptions& selection) {
  auto mentions = [&](const std::vector<std::string>& list) {
    return std::any_of(list.begin(), list.end(), [&](const std::string& item) {
      return item == info.id || item == info.name ||
             std::find(info.tags.begin(), info.tags.end(), item) != info.tags.end();
    });
  };
  if (!selection.only.empty() && !mentions(selection.only)) return false;
  return !mentions(selection.skip);
}

std::string collective_label(const AlignedCollective& c) {
  std::string label(to_string(c.type));
  if (!c.group.empty()) label += " (group " + c.group + ")";
  return label;
}

}  // namespace

std::vector<RankResult> check_files(const std::vector<std::string>& files, const RankCheck& check, unsigned threads,
                                    Progress& progress) {
  std::vector<RankResult> results(files.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, files.size()));
  std::atomic<size_t> next{0};
  // Progress in bytes of the files as stored: a file being parsed counts the share of it parsed so far.
  std::vector<uint64_t> file_bytes(files.size(), 0), bytes_read(files.size(), 0);
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(files[i], ec);
    file_bytes[i] = ec ? 0 : size;
    total_bytes += file_bytes[i];
  }
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
        load.on_bytes_parsed = [&, i](uint64_t parsed, uint64_t size) {
          if (size > 0) advance(i, static_cast<uint64_t>(static_cast<double>(file_bytes[i]) * parsed / size), false);
        };
        results[i] = check_file(files[i], check, load);
        advance(i, file_bytes[i], true);
      }
    } catch (...) {
      std::lock_guard lock(failing);
      if (!failure) failure = std::current_exception();
      next = files.size();  // the other workers stop after their current file
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had (memory or process limits): fewer workers
    }
  }
  work();
  for (auto& thread : pool) thread.join();
  progress.finish();
  if (failure) std::rethrow_exception(failure);
  return results;
}

TraceReport trace_from_digest(const RankDigest& digest) {
  TraceReport trace;
  trace.path = digest.path;
  trace.rank = digest.rank;
  trace.device = digest.device;
  trace.step_count = digest.step_count;
  trace.step_note = digest.step_note;
  trace.step_ms = digest.step_ms;
  trace.gpu_busy_pct = digest.gpu_busy_pct;
  trace.has_gpu = digest.has_gpu;
  trace.warnings = digest.warnings;
  trace.coverage = digest.coverage;
  trace.findings = digest.findings;
  return trace;
}

void finish_trace(TraceReport& trace, const std::string& source_root, size_t& suppressed) {
  suppressed += apply_suppressions(trace.findings, source_root);
  rank_findings(trace.findings);
  trace.recoverable_ms = recoverable_ms_per_step(trace.findings, trace.step_ms);
}

// A trace checked on its own that runs collectives is one recorded rank of a larger job. The job rules whose
// metrics mean something on one rank (`lone_rank: true`: exposed communication, DDP patterns) run on it, and
// their findings join the trace's own; the rules that compare ranks cannot.
void add_lone_rank_findings(TraceReport& trace, const RankDigest& digest, const JobRuleSet& job_rules,
                            const EvaluateOptions& selection) {
  if (digest.collectives.empty() || !digest.rank) return;  // no job to speak of, or no rank to name
  std::vector<std::string> skip;
  size_t ran = 0;
  for (const auto& info : job_rules.infos()) {
    if (selected(info, selection) && job_rules.judges_lone_rank(info.id)) {
      ++ran;
    } else {
      skip.push_back(info.id);
    }
  }
  if (ran == 0) return;
  const std::vector<const RankDigest*> ranks{&digest};
  const JobAnalysis job = analyze_job(ranks, digest.path);
  std::vector<Finding> found = evaluate_job(job_rules, job, ranks, selection.thresholds, skip);
  const std::string of_job = digest.world_size > 1 ? " of the " + std::to_string(digest.world_size) + "-rank job" : "";
  for (auto& finding : found) {
    auto severity = selection.severities.find(finding.rule_id);
    if (severity != selection.severities.end()) finding.severity = severity->second;
    finding.trace_path = trace.path;
    finding.trace_rank = trace.rank;
    finding.message += " Measured on this rank alone (the other ranks" + of_job +
                       " were not given): time it waited for them counts as communication.";
    trace.findings.push_back(std::move(finding));
    ++trace.prediction.ledger_only;  // job rules declare no transform: not in the all-fixes replay
  }
  trace.coverage.ran += ran;
  if (found.empty()) return;
  rank_findings(trace.findings);
  trace.recoverable_ms = recoverable_ms_per_step(trace.findings, trace.step_ms);
}

std::vector<TraceReport> assemble_jobs(std::vector<TraceReport> traces, const std::vector<RankDigest>& digests,
                                       const JobRuleSet& job_rules, const EvaluateOptions& selection,
                                       std::ostream& err) {
  std::vector<TraceReport> out;
  for (const JobGroup& group : group_jobs(digests)) {
    if (!group.note.empty()) err << "ptadvise: warning: " << format::visible(digests[group.members.front()].path) << ": " << format::visible(group.note) << "\n";
    bool talks = false, distributed = false;
    for (size_t m : group.members) {
      talks = talks || !digests[m].collectives.empty();
      distributed = distributed || digests[m].world_size > 1;
    }
    if (group.members.size() >= 2 && !talks && !distributed) {
      err << "ptadvise: warning: " << format::visible(group.name) << ": " << group.members.size()
          << " traces with ranks in their names but no collectives and no distributed info: checked each on its own\n";
    }
    if (group.members.size() < 2 || (!talks && !distributed)) {
      for (size_t m : group.members) {
        add_lone_rank_findings(traces[m], digests[m], job_rules, selection);
        out.push_back(std::move(traces[m]));
      }
      continue;
    }
    std::vector<const RankDigest*> ranks;
    for (size_t m : group.members) ranks.push_back(&digests[m]);
    const JobAnalysis job = analyze_job(ranks, group.name);
    if (talks && job.aligned_collectives == 0) {
      // The ranks of one job run the same collectives; traces that share none are separate runs.
      err << "ptadvise: warning: " << format::visible(group.name) << ": " << group.members.size()
          << " traces with ranks share no collective: not the ranks of one job; checked each on its own\n";
      for (size_t m : group.members) {
        add_lone_rank_findings(traces[m], digests[m], job_rules, selection);
        out.push_back(std::move(traces[m]));
      }
      continue;
    }

    std::vector<std::string> skip;
    for (const auto& info : job_rules.infos()) {
      if (!selected(info, selection)) skip.push_back(info.id);
    }
    std::vector<Finding> findings = evaluate_job(job_rules, job, ranks, selection.thresholds, skip);
    for (auto& finding : findings) {
      auto severity = selection.severities.find(finding.rule_id);
      if (severity != selection.severities.end()) finding.severity = severity->second;
    }

    // Per-rank findings every rank has (same rule and site) are shown once, in the job's entry.
    std::map<std::string, size_t> ranks_with;
    for (size_t m : group.members) {
      std::set<std::string> seen;
      for (const auto& f : traces[m].findings) {
        if (seen.insert(f.fingerprint).second) ++ranks_with[f.fingerprint];
      }
    }
    JobTable table;
    for (size_t m : group.members) {
      auto& rank_findings_list = traces[m].findings;
      for (auto it = rank_findings_list.begin(); it != rank_findings_list.end();) {
        if (ranks_with[it->fingerprint] != group.members.size()) {
          ++it;
          continue;
        }
        if (m == group.members.front()) {
          Finding folded = *it;
          folded.message += " (on all " + std::to_string(group.members.size()) + " ranks)";
          if (!folded.short_message.empty()) folded.short_message += " (all " + std::to_string(group.members.size()) + " ranks)";
          for (size_t other : group.members) folded.ranks.push_back(traces[other].rank.value_or(-1));
          folded.trace_path = group.name;
          folded.trace_rank.reset();
          findings.push_back(std::move(folded));
          ++table.folded_findings;
        }
        it = rank_findings_list.erase(it);
      }
      traces[m].recoverable_ms = recoverable_ms_per_step(rank_findings_list, traces[m].step_ms);
    }
    rank_findings(findings);

    table.directory = group.name;
    table.ranks = group.members.size();
    table.world_size = job.world_size;
    table.backend = digests[group.members.front()].backend;
    table.aligned_collectives = job.aligned_collectives;
    table.unmatched_collectives = job.unmatched_collectives;
    table.by_sequence = job.by_sequence;
    table.compute_imbalance_pct = job.compute_imbalance_pct;
    double busy = 0;
    bool has_gpu = false;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const RankDigest& d = *ranks[r];
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
    entry.device = digests[group.members.front()].device;
    entry.step_count = digests[group.members.front()].step_count;
    entry.step_note = std::to_string(group.members.size()) + " ranks of a " +
                      (job.world_size > 1 ? std::to_string(job.world_size) + "-rank job" : std::string("job"));
    entry.step_ms = job.step_ms;
    entry.gpu_busy_pct = busy / static_cast<double>(ranks.size());
    entry.has_gpu = has_gpu;
    entry.coverage.ran = job_rules.infos().size() - skip.size();
    entry.findings = std::move(findings);
    entry.recoverable_ms = recoverable_ms_per_step(entry.findings, entry.step_ms);
    entry.job = std::move(table);
    out.push_back(std::move(entry));
    for (size_t m : group.members) out.push_back(std::move(traces[m]));
  }
  return out;
}

}  // namespace ptadvise::check_detail
