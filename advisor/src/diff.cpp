// `ptadvise diff BASE NEW`: what changed between two recordings of the same program.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <set>
#include <unordered_map>

#include "ptadvise/advisor.h"
#include "ptadvise/schema_versions.h"

namespace ptadvise {

namespace {

// Sums the durations of events of one kind per distinct name (interned id first, so each name is
// normalised once), over the events inside steps, divided by the number of steps.
std::map<std::string, double> ms_per_step_by_name(const Analysis& analysis, EventKind wanted) {
  std::map<std::string, double> totals;
  if (!analysis.timeline) return totals;
  const Timeline& timeline = *analysis.timeline;
  const Events& events = timeline.events;
  const bool only_in_steps = !analysis.steps.empty() && analysis.event_step.size() == events.size();
  std::unordered_map<StringId, int64_t> ns_by_id;
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (events.kind[i] != wanted) continue;
    if (only_in_steps && analysis.event_step[i] == kNone) continue;
    ns_by_id[events.name[i]] += events.dur_ns[i];
  }
  const double steps = static_cast<double>(std::max<size_t>(1, analysis.steps.size()));
  for (const auto& [id, ns] : ns_by_id) {
    totals[normalize_name(timeline.strings.view(id))] += static_cast<double>(ns) / 1e6 / steps;
  }
  return totals;
}

std::vector<TimeChange> biggest_changes(const std::map<std::string, double>& base,
                                        const std::map<std::string, double>& next, size_t top_n) {
  std::vector<TimeChange> changes;
  std::set<std::string> names;
  for (const auto& [name, ms] : base) names.insert(name);
  for (const auto& [name, ms] : next) names.insert(name);
  for (const auto& name : names) {
    TimeChange change;
    change.name = name;
    if (auto it = base.find(name); it != base.end()) change.base_ms_per_step = it->second;
    if (auto it = next.find(name); it != next.end()) change.new_ms_per_step = it->second;
    if (std::abs(change.delta_ms()) >= 0.0005) changes.push_back(std::move(change));  // below the printed precision
  }
  std::stable_sort(changes.begin(), changes.end(), [](const TimeChange& a, const TimeChange& b) {
    return std::abs(a.delta_ms()) > std::abs(b.delta_ms());
  });
  if (changes.size() > top_n) changes.resize(top_n);
  return changes;
}

}  // namespace

std::map<std::string, double> kernel_ms_per_step(const Analysis& analysis) {
  return ms_per_step_by_name(analysis, EventKind::Kernel);
}

std::map<std::string, double> cpu_op_ms_per_step(const Analysis& analysis) {
  return ms_per_step_by_name(analysis, EventKind::CpuOp);
}

DiffReport diff_analyses(const Analysis& base, std::vector<Finding> base_findings, const Analysis& next,
                         std::vector<Finding> next_findings, size_t top_n) {
  DiffReport diff;
  if (base.timeline) diff.base_path = base.timeline->path;
  if (next.timeline) diff.new_path = next.timeline->path;
  diff.base_step_ms = base.median_step_ns() / 1e6;
  diff.new_step_ms = next.median_step_ns() / 1e6;
  diff.step_change_pct = diff.base_step_ms > 0 ? 100.0 * (diff.new_step_ms - diff.base_step_ms) / diff.base_step_ms : 0;

  rank_findings(base_findings);
  rank_findings(next_findings);
  std::set<std::string> base_prints, next_prints;
  for (const auto& f : base_findings) base_prints.insert(f.fingerprint);
  for (const auto& f : next_findings) next_prints.insert(f.fingerprint);
  for (auto& f : next_findings) {
    if (!base_prints.count(f.fingerprint)) diff.appeared.push_back(std::move(f));
  }
  for (auto& f : base_findings) {
    if (!next_prints.count(f.fingerprint)) diff.disappeared.push_back(std::move(f));
  }
  diff.kernels = biggest_changes(kernel_ms_per_step(base), kernel_ms_per_step(next), top_n);
  diff.ops = biggest_changes(cpu_op_ms_per_step(base), cpu_op_ms_per_step(next), top_n);
  return diff;
}

}  // namespace ptadvise
