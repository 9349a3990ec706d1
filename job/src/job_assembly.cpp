// The jobs of a check (job.h): which checked traces are the ranks of one job, the job rules' findings on
// each, the per-rank findings every rank shares folded into one, and the job rules that judge a lone rank.
#include <algorithm>
#include <map>
#include <set>

#include "ptadvise/job.h"
#include "ptadvise/rules.h"

namespace ptadvise {

namespace {

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

void apply_severities(std::vector<Finding>& findings, const EvaluateOptions& selection) {
  for (auto& finding : findings) {
    auto severity = selection.severities.find(finding.rule_id);
    if (severity != selection.severities.end()) finding.severity = severity->second;
  }
}

// Moves the per-rank findings every member has (same fingerprint: rule and site) out of the members' findings;
// the first member's copy of each becomes one finding of the job, appended to `into`. Returns how many.
size_t fold_shared_findings(const JobGroup& group, const std::vector<RankDigest>& digests,
                            std::vector<std::vector<Finding>>& rank_findings, std::vector<Finding>& into) {
  const size_t members = group.members.size();
  std::map<std::string, size_t> ranks_with;
  for (size_t m : group.members) {
    std::set<std::string> seen;
    for (const auto& f : rank_findings[m]) {
      if (seen.insert(f.fingerprint).second) ++ranks_with[f.fingerprint];
    }
  }
  size_t folded_count = 0;
  for (size_t m : group.members) {
    std::vector<Finding>& findings = rank_findings[m];
    for (auto it = findings.begin(); it != findings.end();) {
      if (ranks_with[it->fingerprint] != members) {
        ++it;
        continue;
      }
      if (m == group.members.front()) {
        Finding folded = *it;
        folded.message += " (on all " + std::to_string(members) + " ranks)";
        if (!folded.short_message.empty()) folded.short_message += " (all " + std::to_string(members) + " ranks)";
        for (size_t other : group.members) folded.ranks.push_back(digests[other].rank.value_or(-1));
        folded.trace_path = group.name;
        folded.trace_rank.reset();
        into.push_back(std::move(folded));
        ++folded_count;
      }
      it = findings.erase(it);
    }
  }
  return folded_count;
}

}  // namespace

std::vector<CheckedJob> assemble_jobs(const std::vector<RankDigest>& digests,
                                      std::vector<std::vector<Finding>>& rank_findings, const JobRuleSet& rules,
                                      const EvaluateOptions& selection) {
  std::vector<CheckedJob> out;
  for (JobGroup& group : group_jobs(digests)) {
    CheckedJob entry;
    const size_t members = group.members.size();
    if (!group.note.empty()) entry.notes.push_back({digests[group.members.front()].path, group.note});
    bool talks = false, distributed = false;
    for (size_t m : group.members) {
      talks = talks || !digests[m].collectives.empty();
      distributed = distributed || digests[m].world_size > 1;
    }
    if (members >= 2 && !talks && !distributed) {
      entry.notes.push_back({group.name, std::to_string(members) +
                                             " traces with ranks in their names but no collectives and no "
                                             "distributed info: checked each on its own"});
    }
    if (members < 2 || (!talks && !distributed)) {
      entry.group = std::move(group);
      out.push_back(std::move(entry));
      continue;
    }
    std::vector<const RankDigest*> ranks;
    for (size_t m : group.members) ranks.push_back(&digests[m]);
    JobAnalysis job = analyze_job(ranks, group.name);
    if (talks && job.aligned_collectives == 0) {
      // The ranks of one job run the same collectives; traces that share none are separate runs.
      entry.notes.push_back({group.name, std::to_string(members) +
                                             " traces with ranks share no collective: not the ranks of one job; "
                                             "checked each on its own"});
      entry.group = std::move(group);
      out.push_back(std::move(entry));
      continue;
    }
    std::vector<std::string> skip;
    for (const auto& info : rules.infos()) {
      if (!selected(info, selection)) skip.push_back(info.id);
    }
    entry.findings = evaluate_job(rules, job, ranks, selection.thresholds, skip);
    apply_severities(entry.findings, selection);
    entry.folded_findings = fold_shared_findings(group, digests, rank_findings, entry.findings);
    entry.rules_ran = rules.infos().size() - skip.size();
    entry.analysis = std::move(job);
    entry.group = std::move(group);
    out.push_back(std::move(entry));
  }
  return out;
}

LoneRankFindings evaluate_lone_rank(const RankDigest& digest, const JobRuleSet& rules,
                                    const EvaluateOptions& selection) {
  LoneRankFindings out;
  if (digest.collectives.empty() || !digest.rank) return out;  // no job to speak of, or no rank to name
  std::vector<std::string> skip;
  for (const auto& info : rules.infos()) {
    if (selected(info, selection) && rules.judges_lone_rank(info.id)) {
      ++out.rules_ran;
    } else {
      skip.push_back(info.id);
    }
  }
  if (out.rules_ran == 0) return out;
  const std::vector<const RankDigest*> ranks{&digest};
  const JobAnalysis job = analyze_job(ranks, digest.path);
  out.findings = evaluate_job(rules, job, ranks, selection.thresholds, skip);
  apply_severities(out.findings, selection);
  const std::string of_job = digest.world_size > 1 ? " of the " + std::to_string(digest.world_size) + "-rank job" : "";
  for (auto& finding : out.findings) {
    finding.trace_path = digest.path;
    finding.trace_rank = digest.rank;
    finding.message += " Measured on this rank alone (the other ranks" + of_job +
                       " were not given): time it waited for them counts as communication.";
  }
  return out;
}

}  // namespace ptadvise
