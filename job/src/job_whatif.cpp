// predict_job(): the ranks' step replays joined at their collectives (docs/WHATIF.md, "Jobs"). Each rank's
// digest carries its replay as a function of the ends of its collectives (RankJoin); the job sets each
// collective's end to the latest arrival of its ranks plus its transfer time, in the order the collectives
// happen, and measures the steps' periods as the per-trace replay does. Linear in the collectives and
// their terms; no trace is held.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "matching.h"

namespace ptadvise {
namespace {

using whatif::kNoTime;

struct Item {
  int64_t when = 0;      // aligned measured start (the earliest rank's for a job collective)
  int64_t match = -1;    // index into CollectiveMatch::complete; -1: one rank's own collective
  size_t rank = 0;       // for a rank's own
  size_t call = 0;
};

// The job steps every rank replays: model step i is measured and holds the step after it (i + 1).
struct StepPlan {
  std::vector<int64_t> numbers;             // Step::number of each job step
  std::vector<std::vector<size_t>> index;   // per rank, per job step: the model step
};

StepPlan plan_steps(const std::vector<const RankDigest*>& ranks) {
  StepPlan plan;
  std::map<int64_t, std::vector<size_t>> found;  // number -> model step per rank
  const size_t n = ranks.size();
  for (size_t r = 0; r < n; ++r) {
    const RankJoin& join = ranks[r]->join;
    for (size_t i = 0; i + 1 < join.step_numbers.size(); ++i) {
      if (!join.measured[i]) continue;
      auto& slots = found.try_emplace(join.step_numbers[i], std::vector<size_t>(n, SIZE_MAX)).first->second;
      slots[r] = i;
    }
  }
  plan.index.resize(n);
  for (const auto& [number, slots] : found) {
    if (std::any_of(slots.begin(), slots.end(), [](size_t i) { return i == SIZE_MAX; })) continue;
    plan.numbers.push_back(number);
    for (size_t r = 0; r < n; ++r) plan.index[r].push_back(slots[r]);
  }
  return plan;
}

struct Joined {
  double step_ns = 0;        // mean over the job steps of the slowest rank's period
  size_t joined = 0;         // collectives whose end the job set
  bool complete = true;      // every step had a period on every rank
};

int64_t difference(int64_t later, int64_t earlier) {
  return later == kNoTime || earlier == kNoTime ? kNoTime : saturating_minus(later, earlier);
}

// Ranks that keep pace with the others (a job finding's transform): the work that made them late before
// each collective is gone, so each of their instants comes earlier by the excess removed before it. Per
// rank (empty for the others): `through[c]`, the excess removed up to and including collective c (its
// arrival comes that much earlier), and per model step the excess removed before its host start and its
// first GPU op. An instant after some collective's end is max(free, end + delay) in the model; removing
// the excess C before the instant and C_c before that end makes it max(free, end + C_c + delay) - C: the
// model is evaluated at the ends raised by `through` and lowered by the instant's own excess.
struct Pace {
  std::vector<std::vector<int64_t>> through;
  std::vector<std::vector<int64_t>> host_before, gpu_before;
  bool paces(size_t r) const { return r < through.size() && !through[r].empty(); }
};

Joined join(const std::vector<const RankDigest*>& ranks, const CollectiveMatch& match, const StepPlan& plan,
            bool fixed, const Pace* pace = nullptr) {
  const size_t n = ranks.size();
  auto model = [&](size_t r) -> const whatif::JoinModel& { return fixed ? ranks[r]->join.fixed : ranks[r]->join.unchanged; };
  std::vector<std::vector<int64_t>> ends(n);
  std::vector<std::vector<uint8_t>> in_job(n);
  for (size_t r = 0; r < n; ++r) {
    ends[r].assign(ranks[r]->collectives.size(), kNoTime);
    in_job[r].assign(ranks[r]->collectives.size(), 0);
  }
  std::vector<Item> items;
  for (size_t m = 0; m < match.complete.size(); ++m) {
    const auto& slots = match.complete[m];
    bool everywhere = true;
    int64_t when = std::numeric_limits<int64_t>::max();
    for (size_t r = 0; r < n; ++r) {
      const auto c = static_cast<size_t>(slots[r]);
      everywhere = everywhere && ranks[r]->join.in_window[c];
      when = std::min(when, saturating_minus(ranks[r]->collectives[c].start_ns, match.offset[r]));
    }
    if (!everywhere) continue;
    items.push_back({when, static_cast<int64_t>(m), 0, 0});
    for (size_t r = 0; r < n; ++r) in_job[r][static_cast<size_t>(slots[r])] = 1;
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t c = 0; c < ranks[r]->collectives.size(); ++c) {
      if (ranks[r]->join.in_window[c] && !in_job[r][c]) {
        items.push_back({saturating_minus(ranks[r]->collectives[c].start_ns, match.offset[r]), -1, r, c});
      }
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.when < b.when; });

  Joined out;
  // A paced rank's ends as its model sees them (raised by the excess removed before each).
  std::vector<std::vector<int64_t>> raised(n);
  for (size_t r = 0; r < n; ++r) {
    if (pace != nullptr && pace->paces(r)) raised[r].assign(ranks[r]->collectives.size(), kNoTime);
  }
  auto set_end = [&](size_t r, size_t c, int64_t end) {
    ends[r][c] = end;
    if (!raised[r].empty()) raised[r][c] = end == kNoTime ? kNoTime : saturating_plus(end, pace->through[r][c]);
  };
  auto at = [&](size_t r, const whatif::JoinTime& time, int64_t removed_before) {
    if (raised[r].empty()) return time.at(ends[r]);
    const int64_t value = time.at(raised[r]);
    return value == kNoTime ? kNoTime : saturating_minus(value, removed_before);
  };
  auto arrival_of = [&](size_t r, size_t c) { return at(r, model(r).arrival[c], raised[r].empty() ? 0 : pace->through[r][c]); };
  // A rank's own collective (not on every rank, or outside another rank's replay) keeps its measured length.
  auto own_end = [&](size_t r, size_t c) {
    const CollectiveCall& call = ranks[r]->collectives[c];
    const int64_t arrival = arrival_of(r, c);
    set_end(r, c, arrival == kNoTime ? call.end_ns : saturating_plus(arrival, saturating_minus(call.end_ns, call.start_ns)));
  };
  std::vector<int64_t> arrival(n);
  for (const Item& item : items) {
    if (item.match < 0) {
      own_end(item.rank, item.call);
      continue;
    }
    const auto& slots = match.complete[static_cast<size_t>(item.match)];
    bool known = true;
    int64_t transfer = std::numeric_limits<int64_t>::max();
    for (size_t r = 0; r < n; ++r) {
      const auto c = static_cast<size_t>(slots[r]);
      const CollectiveCall& call = ranks[r]->collectives[c];
      arrival[r] = arrival_of(r, c);
      known = known && arrival[r] != kNoTime;
      // The rank that arrived last waited for nobody: the shortest time inside is the transfer.
      transfer = std::min(transfer, std::max<int64_t>(saturating_minus(call.end_ns, call.start_ns), 0));
    }
    if (!known) {
      for (size_t r = 0; r < n; ++r) own_end(r, static_cast<size_t>(slots[r]));
      continue;
    }
    int64_t latest = std::numeric_limits<int64_t>::min();
    for (size_t r = 0; r < n; ++r) latest = std::max(latest, saturating_minus(arrival[r], match.offset[r]));
    for (size_t r = 0; r < n; ++r) set_end(r, static_cast<size_t>(slots[r]), saturating_plus(saturating_plus(latest, transfer), match.offset[r]));
    ++out.joined;
  }

  double total = 0;
  for (size_t s = 0; s < plan.numbers.size(); ++s) {
    int64_t slowest = kNoTime;
    for (size_t r = 0; r < n; ++r) {
      const size_t i = plan.index[r][s];
      const auto& steps = model(r).steps;
      auto removed = [&](const std::vector<std::vector<int64_t>> Pace::*before, size_t k) {
        return raised[r].empty() ? int64_t{0} : (pace->*before)[r][k];
      };
      const int64_t host = difference(at(r, steps[i + 1].host_start, removed(&Pace::host_before, i + 1)),
                                      at(r, steps[i].host_start, removed(&Pace::host_before, i)));
      const int64_t gpu = difference(at(r, steps[i + 1].gpu_first, removed(&Pace::gpu_before, i + 1)),
                                     at(r, steps[i].gpu_first, removed(&Pace::gpu_before, i)));
      // As replay() measures a period: the later side, or the GPU's alone when the step is only its GPU span.
      int64_t period = steps[i].gpu_span_only && gpu != kNoTime ? gpu : std::max(host, gpu);
      if (period == kNoTime) {
        out.complete = false;
        continue;
      }
      slowest = std::max(slowest, std::max<int64_t>(period, 0));
    }
    if (slowest == kNoTime) {
      out.complete = false;
      continue;
    }
    total += static_cast<double>(slowest);
  }
  out.step_ns = plan.numbers.empty() ? 0 : total / static_cast<double>(plan.numbers.size());
  return out;
}

}  // namespace

JobPrediction predict_job(const std::vector<const RankDigest*>& ranks, const CollectiveMatch& match) {
  JobPrediction out;
  if (ranks.size() < 2) return out;
  for (const RankDigest* digest : ranks) {
    if (!digest->join.available) {
      out.note = (digest->path.empty() ? std::string("a rank") : digest->path) +
                 " has no step replay to join (no steady steps, or checked without the what-if)";
      return out;
    }
    out.ranks_alone_step_ms = std::max(out.ranks_alone_step_ms, digest->join.predicted_step_ms);
  }
  if (match.complete.empty()) {
    out.note = "no collective is matched on every rank";
    return out;
  }
  const StepPlan plan = plan_steps(ranks);
  if (plan.numbers.empty()) {
    out.note = "the ranks' replays hold no step in common (each replays its own window of steps)";
    return out;
  }
  const Joined unchanged = join(ranks, match, plan, false);
  const Joined fixed = join(ranks, match, plan, true);
  if (unchanged.joined == 0) {
    out.note = "no collective matched on every rank lies in every rank's replayed steps";
    return out;
  }
  double measured = 0;
  for (size_t s = 0; s < plan.numbers.size(); ++s) {
    int64_t slowest = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      slowest = std::max(slowest, ranks[r]->join.measured_period_ns[plan.index[r][s]]);
    }
    measured += static_cast<double>(slowest);
  }
  out.available = true;
  out.steps = plan.numbers.size();
  out.joined_collectives = unchanged.joined;
  out.measured_step_ms = measured / static_cast<double>(plan.numbers.size()) / 1e6;
  out.replayed_step_ms = unchanged.step_ns / 1e6;
  // The replay's own error cancels, as for one trace: the prediction is what the fixes change in it.
  out.predicted_step_ms = std::max(0.0, out.measured_step_ms - std::max(0.0, (unchanged.step_ns - fixed.step_ns) / 1e6));
  std::string inexact;
  for (const RankDigest* digest : ranks) {
    if (!digest->join.exact && inexact.empty()) inexact = digest->path.empty() ? std::string("a rank") : digest->path;
  }
  if (!inexact.empty()) {
    out.note = inexact + ": its replay as a function of its collectives' ends does not give back its own replay "
               "(a thread that does not wait for the collectives in between, in a trace too large to follow every "
               "path); the joined replay may err";
  } else if (!unchanged.complete || !fixed.complete) {
    out.note = "some steps have no period on some rank (no host thread and no GPU op to time them)";
  } else if (out.measured_step_ms > 0 && std::fabs(out.replayed_step_ms / out.measured_step_ms - 1.0) > 0.03) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "the joined replay of the unchanged job gives %.3f ms per step, measured %.3f ms; the prediction "
                  "is less certain",
                  out.replayed_step_ms, out.measured_step_ms);
    out.note = text;
  }
  return out;
}

std::optional<double> keep_pace_step_ms(const std::vector<const RankDigest*>& ranks, const JobAnalysis& job,
                                        const std::vector<size_t>& pace) {
  const JobPrediction& joined = job.prediction;
  if (!joined.available || job.match == nullptr || job.match->offset.size() != ranks.size()) return std::nullopt;
  const CollectiveMatch& match = *job.match;
  const size_t n = ranks.size();
  std::vector<uint8_t> paced(n, 0);
  for (size_t r : pace) {
    if (r < n) paced[r] = 1;
  }
  const size_t count = static_cast<size_t>(std::count(paced.begin(), paced.end(), 1));
  if (count == 0 || count == n) return std::nullopt;
  // Measured arrivals on the first rank's clock: how much later than the others' median each paced rank
  // came to each collective is the excess its stretch before it held.
  std::vector<std::vector<int64_t>> excess(n);
  for (size_t r = 0; r < n; ++r) {
    if (paced[r]) excess[r].assign(ranks[r]->collectives.size(), 0);
  }
  std::vector<int64_t> others;
  for (const auto& slots : match.complete) {
    auto arrival = [&](size_t r) { return saturating_minus(ranks[r]->collectives[static_cast<size_t>(slots[r])].start_ns, match.offset[r]); };
    others.clear();
    for (size_t r = 0; r < n; ++r) {
      if (!paced[r]) others.push_back(arrival(r));
    }
    const int64_t middle = median_of(others);
    for (size_t r = 0; r < n; ++r) {
      if (paced[r]) excess[r][static_cast<size_t>(slots[r])] = std::max<int64_t>(saturating_minus(arrival(r), middle), 0);
    }
  }
  // Per paced rank, the excess removed before each instant, by the measured times of its arrivals.
  Pace shift;
  shift.through.resize(n);
  shift.host_before.resize(n);
  shift.gpu_before.resize(n);
  for (size_t r = 0; r < n; ++r) {
    if (!paced[r]) continue;
    const std::vector<CollectiveCall>& calls = ranks[r]->collectives;
    std::vector<size_t> order(calls.size());
    for (size_t c = 0; c < order.size(); ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return calls[a].start_ns < calls[b].start_ns; });
    std::vector<int64_t> starts, removed_by;  // in arrival order: the start, and the excess removed through it
    int64_t sum = 0;
    shift.through[r].assign(calls.size(), 0);
    for (size_t c : order) {
      sum = saturating_plus(sum, excess[r][c]);
      shift.through[r][c] = sum;
      starts.push_back(calls[c].start_ns);
      removed_by.push_back(sum);
    }
    auto before = [&](int64_t when) -> int64_t {
      if (when == kNoTime) return 0;
      const auto k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), when) - starts.begin());
      return k == 0 ? 0 : removed_by[k - 1];
    };
    std::vector<int64_t> measured_ends(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) measured_ends[c] = calls[c].end_ns;
    for (const whatif::JoinStep& step : ranks[r]->join.unchanged.steps) {
      shift.host_before[r].push_back(before(step.host_start.at(measured_ends)));
      shift.gpu_before[r].push_back(before(step.gpu_first.at(measured_ends)));
    }
  }
  const Joined kept = join(ranks, match, plan_steps(ranks), false, &shift);
  if (kept.joined == 0) return std::nullopt;
  // As for the fixes: what keeping pace changes in the joined replay comes off the measured step.
  return std::max(0.0, joined.measured_step_ms - std::max(0.0, joined.replayed_step_ms - kept.step_ns / 1e6));
}

}  // namespace ptadvise
