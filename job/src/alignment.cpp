// analyze_job(): matches the same collective across ranks, aligns the ranks' clocks on collective ends,
// and measures arrival skew, the last rank, the wait inside collectives and compute imbalance.
//
// Clocks: ranks record with their own clocks (and host-only traces from PyTorch 1.x have no absolute time at
// all). Every rank leaves a collective at nearly the same moment — nobody finishes before the last one has
// arrived — so the median difference of the end times of matched collectives is each rank's clock offset.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "matching.h"
#include "ptadvise/job.h"

namespace ptadvise {

namespace {

using CallKey = std::tuple<int64_t, std::string, int64_t>;  // (step or -1, group, order or sequence number)

struct Stretch {
  double compute = 0, data_loader = 0, copies = 0, host = 0, untraced = 0;
};

Stretch stretch_of(const CollectiveCall& call) {
  Stretch s;
  s.compute = static_cast<double>(call.before_compute_ns);
  s.data_loader = static_cast<double>(call.before_data_loader_ns);
  s.copies = static_cast<double>(call.before_copy_ns);
  s.host = static_cast<double>(call.before_host_ns);
  const int64_t device = saturating_plus(call.before_compute_ns, call.before_copy_ns);
  const int64_t host = saturating_plus(call.before_host_ns, call.before_data_loader_ns);
  s.untraced = static_cast<double>(std::max<int64_t>(saturating_minus(call.before_ns, std::max(device, host)), 0));
  return s;
}

}  // namespace

CollectiveMatch match_collectives(const std::vector<const RankDigest*>& ranks) {
  CollectiveMatch match;
  const size_t n = ranks.size();
  match.offset.assign(n, 0);
  if (n < 2) return match;
  // By sequence number when every rank records them, else by step, group and order.
  bool sequences = true;
  for (const RankDigest* digest : ranks) {
    match.total += digest->collectives.size();
    for (const auto& call : digest->collectives) sequences = sequences && call.seq >= 0;
  }
  match.by_sequence = sequences && match.total > 0;
  std::map<CallKey, std::vector<int64_t>> matched;  // key -> call index per rank (-1 = absent)
  for (size_t r = 0; r < n; ++r) {
    const auto& calls = ranks[r]->collectives;
    for (size_t c = 0; c < calls.size(); ++c) {
      const std::string group = calls[c].group + '\x1f' + std::string(to_string(calls[c].type));
      CallKey key = match.by_sequence ? CallKey{-1, calls[c].group, calls[c].seq}
                                      : CallKey{calls[c].step, group, static_cast<int64_t>(calls[c].order)};
      auto& slots = matched.try_emplace(key, std::vector<int64_t>(n, -1)).first->second;
      if (slots[r] < 0) slots[r] = static_cast<int64_t>(c);
    }
  }
  for (auto& [key, slots] : matched) {
    if (std::all_of(slots.begin(), slots.end(), [](int64_t s) { return s >= 0; })) match.complete.push_back(std::move(slots));
  }
  if (match.complete.empty()) return match;
  // Clock offsets against the first rank: the median difference of collective ends.
  for (size_t r = 1; r < n; ++r) {
    std::vector<int64_t> differences;
    for (const auto& slots : match.complete) {
      differences.push_back(saturating_minus(ranks[r]->collectives[static_cast<size_t>(slots[r])].end_ns,
                                             ranks[0]->collectives[static_cast<size_t>(slots[0])].end_ns));
    }
    match.offset[r] = median_of(differences);
  }
  return match;
}

JobAnalysis analyze_job(const std::vector<const RankDigest*>& ranks, const std::string& name) {
  JobAnalysis job;
  job.name = name;
  const size_t n = ranks.size();
  job.per_rank.resize(n);
  for (size_t r = 0; r < n; ++r) {
    job.per_rank[r].rank = ranks[r]->rank.value_or(static_cast<int>(r));
    job.per_rank[r].digest = r;
    job.ranks.push_back(job.per_rank[r].rank);
    job.world_size = std::max(job.world_size, ranks[r]->world_size);
  }
  std::sort(job.ranks.begin(), job.ranks.end());
  if (n == 0) return job;

  // Compute imbalance and the job's step time.
  std::vector<double> compute;
  double step_sum = 0;
  for (size_t r = 0; r < n; ++r) {
    compute.push_back(ranks[r]->compute_ms);
    step_sum += ranks[r]->step_ms;
  }
  job.step_ms = step_sum / static_cast<double>(n);
  auto max_it = std::max_element(compute.begin(), compute.end());
  job.compute_max_ms = *max_it;
  job.compute_min_ms = *std::min_element(compute.begin(), compute.end());
  job.compute_median_ms = median_of(compute);
  job.slowest_compute_rank = job.per_rank[static_cast<size_t>(max_it - compute.begin())].rank;
  job.compute_imbalance_pct = job.compute_max_ms > 0 ? 100.0 * (job.compute_max_ms - job.compute_min_ms) / job.compute_max_ms : 0;
  if (n < 2) return job;

  job.match = std::make_shared<const CollectiveMatch>(match_collectives(ranks));
  const CollectiveMatch& match = *job.match;
  job.by_sequence = match.by_sequence;
  job.aligned_collectives = match.complete.size();
  job.unmatched_collectives = match.total - match.complete.size() * n;
  job.prediction = predict_job(ranks, match);
  if (match.complete.empty()) return job;
  const std::vector<int64_t>& offset = match.offset;
  for (size_t r = 0; r < n; ++r) job.per_rank[r].clock_offset_ms = static_cast<double>(offset[r]) / kNsPerMs;
  // The per-step statistics count the steps whose collectives can be compared on every rank. A step in
  // which some rank has a collective the others lack says nothing of who waited in it, nor does a last
  // step whose collective record (gloo's, on a helper thread) the profiler's stop lost on every rank
  // (RankDigest::collectives_cut_step); dividing their waits by every step would thin them out. When that
  // would leave no step (a rank runs an extra collective in every step), every step counts.
  std::vector<std::vector<uint8_t>> matched(n);
  for (size_t r = 0; r < n; ++r) matched[r].assign(ranks[r]->collectives.size(), 0);
  for (const auto& slots : match.complete) {
    for (size_t r = 0; r < n; ++r) matched[r][static_cast<size_t>(slots[r])] = 1;
  }
  std::set<int64_t> uncompared;
  for (const RankDigest* digest : ranks) {
    if (digest->collectives_cut_step >= 0) uncompared.insert(digest->collectives_cut_step);
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t c = 0; c < ranks[r]->collectives.size(); ++c) {
      const int64_t step = ranks[r]->collectives[c].step;
      if (!matched[r][c] && step >= 0) uncompared.insert(step);
    }
  }
  auto counted = [&](const std::vector<int64_t>& slots) {
    for (size_t r = 0; r < n; ++r) {
      if (uncompared.count(ranks[r]->collectives[static_cast<size_t>(slots[r])].step) > 0) return false;
    }
    return true;
  };
  std::vector<const std::vector<int64_t>*> complete;
  for (const auto& slots : match.complete) {
    if (counted(slots)) complete.push_back(&slots);
  }
  size_t fewest_steps = SIZE_MAX;
  for (size_t r = 0; r < n; ++r) fewest_steps = std::min(fewest_steps, ranks[r]->steady_steps);
  if (complete.empty() || uncompared.size() >= fewest_steps) {
    uncompared.clear();
    complete.clear();
    for (const auto& slots : match.complete) complete.push_back(&slots);
  }
  job.uncompared_steps = uncompared.size();

  std::vector<double> wait(n, 0), late(n, 0), caused(n, 0);
  std::vector<std::map<CollectiveType, double>> wait_by_type(n);
  std::map<int64_t, std::vector<double>> caused_by_step;  // step -> wait caused per rank
  std::vector<size_t> last_count(n, 0);
  std::vector<Stretch> excess(n);
  for (size_t k = 0; k < complete.size(); ++k) {
    const auto& slots = *complete[k];
    std::vector<int64_t> arrival(n);
    for (size_t r = 0; r < n; ++r) arrival[r] = saturating_minus(ranks[r]->collectives[static_cast<size_t>(slots[r])].start_ns, offset[r]);
    const size_t last = static_cast<size_t>(std::max_element(arrival.begin(), arrival.end()) - arrival.begin());
    const int64_t latest = arrival[last];
    const int64_t first = *std::min_element(arrival.begin(), arrival.end());
    // The others' median arrival: with two ranks, the other rank's.
    std::vector<int64_t> others_arrival;
    for (size_t r = 0; r < n; ++r) {
      if (r != last) others_arrival.push_back(arrival[r]);
    }
    const int64_t middle = median_of(others_arrival);
    AlignedCollective aligned;
    const CollectiveCall& reference = ranks[0]->collectives[static_cast<size_t>(slots[0])];
    aligned.type = reference.type;
    aligned.group = reference.group;
    aligned.step = reference.step;
    aligned.order = reference.order;
    aligned.skew_ms = static_cast<double>(saturating_minus(latest, first)) / kNsPerMs;
    aligned.last_rank = job.per_rank[last].rank;
    aligned.last_late_ms = static_cast<double>(saturating_minus(latest, middle)) / kNsPerMs;
    for (size_t r = 0; r < n; ++r) {
      const CollectiveCall& call = ranks[r]->collectives[static_cast<size_t>(slots[r])];
      const int64_t inside = std::max<int64_t>(saturating_minus(call.end_ns, call.start_ns), 0);
      const double waited = static_cast<double>(std::min(saturating_minus(latest, arrival[r]), inside)) / kNsPerMs;
      wait[r] += waited;
      wait_by_type[r][call.type] += waited;
      if (r != last) aligned.wait_ms_total += waited;
    }
    ++last_count[last];
    auto& step_caused = caused_by_step.try_emplace(reference.step, std::vector<double>(n, 0)).first->second;
    step_caused[last] += aligned.wait_ms_total;
    late[last] += aligned.last_late_ms;
    caused[last] += aligned.wait_ms_total / static_cast<double>(n - 1);  // what each other rank waits, on average
    // What filled the last rank's stretch before the collective, against the median of the others.
    std::vector<Stretch> others;
    for (size_t r = 0; r < n; ++r) {
      if (r != last) others.push_back(stretch_of(ranks[r]->collectives[static_cast<size_t>(slots[r])]));
    }
    auto median_field = [&](double Stretch::*field) {
      std::vector<double> values;
      for (const auto& s : others) values.push_back(s.*field);
      return median_of(values);
    };
    const Stretch mine = stretch_of(ranks[last]->collectives[static_cast<size_t>(slots[last])]);
    for (double Stretch::*field : {&Stretch::compute, &Stretch::data_loader, &Stretch::copies, &Stretch::host,
                                   &Stretch::untraced}) {
      excess[last].*field += mine.*field - median_field(field);
    }
    job.collectives.push_back(aligned);
  }
  std::vector<size_t> straggler_steps(n, 0);
  for (const auto& [step, per_rank] : caused_by_step) {
    const auto top = std::max_element(per_rank.begin(), per_rank.end());
    if (*top > 0) ++straggler_steps[static_cast<size_t>(top - per_rank.begin())];
  }
  for (size_t r = 0; r < n; ++r) {
    job.per_rank[r].compared_steps = std::max<size_t>(ranks[r]->steady_steps - std::min(ranks[r]->steady_steps, uncompared.size()), 1);
    const double steps = static_cast<double>(job.per_rank[r].compared_steps);
    job.per_rank[r].straggler_steps_pct =
        caused_by_step.empty() ? 0 : 100.0 * static_cast<double>(straggler_steps[r]) / static_cast<double>(caused_by_step.size());
    RankJobStats& stats = job.per_rank[r];
    stats.wait_ms = wait[r] / steps;
    stats.last_pct = 100.0 * static_cast<double>(last_count[r]) / static_cast<double>(complete.size());
    stats.late_ms = late[r] / steps;
    stats.caused_wait_ms = caused[r] / steps;
    double all_caused = 0;
    for (double c : caused) all_caused += c;
    stats.caused_wait_share_pct = all_caused > 0 ? 100.0 * caused[r] / all_caused : 0;
    for (const auto& [type, ms] : wait_by_type[r]) stats.wait_by_type[type] = ms / steps;
    const std::pair<const char*, double> causes[] = {{"compute", excess[r].compute},
                                                     {"data-loader", excess[r].data_loader},
                                                     {"copies", excess[r].copies},
                                                     {"host", excess[r].host},
                                                     {"untraced", excess[r].untraced}};
    const auto* best = std::max_element(std::begin(causes), std::end(causes),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
    if (last_count[r] > 0 && best->second > 0) {
      stats.late_cause = best->first;
      stats.late_cause_ms = best->second / kNsPerMs / steps;
    }
  }
  std::stable_sort(job.collectives.begin(), job.collectives.end(),
                   [](const AlignedCollective& a, const AlignedCollective& b) { return a.skew_ms > b.skew_ms; });
  if (job.collectives.size() > 20) job.collectives.resize(20);
  return job;
}

}  // namespace ptadvise
