// Internal to rules/: runs one compiled rule on an analysed timeline — select, group by site, aggregate per
// step, compare, assemble the findings. Every pass is linear in the events (plus ancestor walks); names are
// matched once per interned string. The members are defined by responsibility: evaluator.cpp (the run of
// one rule, and evaluate()), evaluate_selection.cpp (selections: names, kinds, steps, args, ancestors,
// sequences), evaluate_sites.cpp (site keys and groups), evaluate_metrics.cpp (metric values and
// conditions), evaluate_idle.cpp (the ledger gaps a metric counts) and evaluate_findings.cpp (evidence,
// savings, claims and messages).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ptadvise/analysis.h"
#include "rule_model.h"
#include "step_claims.h"

namespace ptadvise::rule_evaluation {

constexpr int64_t kNestingToleranceNs = 1000;  // float µs timestamps rounded separately (KINETO.md)
constexpr int kMaxAncestorDepth = 256;         // guards against a malformed parent chain

struct Group {
  std::vector<EventIndex> events;
};

// Per-track time index of one selection, for the sequence predicates.
struct TrackIndex {
  struct Span {
    int64_t start, end;
    EventIndex event;
  };
  std::unordered_map<uint32_t, std::vector<Span>> by_start;  // sorted by start
  std::unordered_map<uint32_t, std::vector<Span>> by_end;    // sorted by end
};

// What every rule's run looks events and idle stretches up in, made once per trace and read (never written)
// by the evaluators of all threads.
struct EventLookup {
  explicit EventLookup(const Analysis& analysis);
  // Per ledger entry: the length of the idle stretch it belongs to. Ledger entries are pieces of longer
  // stretches (split where the host's activity changes); the whole stretch tells a launch gap from a stall.
  std::vector<int64_t> stretch_ns;
  // Per EventKind, its events in order: most selections ask for one or two kinds, and every rule's scan of
  // all events for them cost more than the rest of the selection.
  std::vector<std::vector<EventIndex>> events_by_kind;
  // Per event name: its events in order (events_by_name[name_first[id] .. name_first[id + 1]]) and the
  // kinds that carry it. A selection by name visits only the events of the names it matches, when they are
  // few against the events of its kinds; most rules look for a handful of names among 10^5 events.
  std::vector<StringId> event_names;  // the distinct event names, ascending; empty when a name is not interned
  std::vector<uint32_t> name_first;
  std::vector<EventIndex> events_by_name;
  std::vector<uint32_t> name_kinds;  // bit (1 << EventKind)
};

// The part of a rule's run that no other rule's findings change: its selections and its groups of sites.
// Made for several rules at once on as many threads; each rule's findings are then made in rule order,
// where the claims of idle time and step time between rules are decided.
struct PreparedRule {
  std::vector<std::vector<EventIndex>> selected;
  std::vector<Group> groups;
};

class Evaluator {
 public:
  Evaluator(const Analysis& analysis, const EventLookup& lookup, std::vector<uint8_t>& claimed,
            StepClaims& step_claims);

  static bool contiguous(const IdleGap& current, const IdleGap& following) {
    return following.device == current.device && following.step == current.step &&
           following.start_ns <= current.end_ns + kNestingToleranceNs;
  }

  std::vector<Finding> run(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options) {
    return finish(info, rule, options, prepare(rule));
  }
  // Selects and groups; touches no claim, so evaluators on several threads may prepare rules at once.
  PreparedRule prepare(const CompiledRule& rule);
  // Compares, claims and makes the findings of a prepared rule, in rule order.
  std::vector<Finding> finish(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options,
                              PreparedRule prepared);

 private:
  // ---- selection (evaluate_selection.cpp) -------------------------------------------------------

  EventIndex anchor(EventIndex i) const {
    // GPU-side events are placed on the host by their launching call.
    if (is_gpu_side(ev_.kind[i])) return i < ev_.launch.size() ? ev_.launch[i] : kNone;
    return i;
  }

  // A launch call that returns no earlier than the end of the GPU op it launched.

  EventIndex parent(EventIndex i) const { return i < ev_.parent.size() ? ev_.parent[i] : kNone; }

  uint32_t step(EventIndex i) const { return i < a_.event_step.size() ? a_.event_step[i] : kNone; }

  bool any_ancestor(EventIndex i, NameCache& cache) const;
  std::optional<std::string> arg_text(EventIndex i, const ArgPredicate& predicate) const;
  std::optional<double> arg_number(EventIndex i, const ArgPredicate& predicate) const;
  bool arg_holds(EventIndex i, const ArgPredicate& predicate) const;
  const TrackIndex& track_index(size_t selection);
  bool sequence_holds(EventIndex i, const SequencePredicate& sequence);
  std::vector<EventIndex> select(const Selection& selection);

  // ---- sites (evaluate_sites.cpp) ---------------------------------------------------------------

  EventIndex op_of(EventIndex i) const;
  std::string source_text(EventIndex i) const;
  std::string site_key(EventIndex i, SiteKey key) const;
  std::vector<Group> make_groups(const CompiledRule& rule) const;

  // ---- metrics and conditions (evaluate_metrics.cpp) --------------------------------------------

  int64_t covered_ns(const std::vector<EventIndex>& events) const;
  const std::vector<EventIndex>& events_of(const Metric& metric) const {
    return metric.site_scoped ? groups_[group_].events : selected_[metric.selection];
  }

  double builtin(const std::string& name) const;

  // Busy share of the steady steps' windows, averaged over devices.
  double gpu_busy_pct() const;
  double compute(size_t metric_index);
  bool depends_on_group(size_t metric_index) const;
  double value(size_t metric_index);
  bool holds(const Condition& condition);

  // ---- idle time from the ledger (evaluate_idle.cpp) --------------------------------------------

  // Gaps of the ledger a metric counts, per group (site-scoped) or as one list.
  const std::vector<std::vector<uint32_t>>& idle_gaps(size_t metric_index);

  // A matched blocking call's gap also takes the gaps of the host's refill after it.
  void extend_to_refill(const Metric& metric, std::vector<std::vector<uint32_t>>& out) const;

  // The gaps a metric counts for the current group.
  const std::vector<uint32_t>& gaps_for(size_t metric_index);
  // For a rule with a site-scoped idle metric, the group's events it charges idle time to: `site`, the
  // earliest event of the name charged the most (kNone without such a metric or charge), and up to `top`
  // events to show as evidence, the site's name first, then by charge.
  struct ChargedCulprits {
    EventIndex site = kNone;
    std::vector<EventIndex> shown;
  };
  ChargedCulprits site_culprits(const CompiledRule& rule, const Group& group, size_t top);

  // ---- findings (evaluate_findings.cpp) ---------------------------------------------------------

  std::string track_text(EventIndex i) const;
  std::string idle_breakdown(size_t top = 3);

  // The culprits of the gaps counted by the rule's first idle metric, by name, largest first.
  std::string idle_culprits(size_t top = 3);

  // The message template filled in for the current group; `brief` for a short_message.
  std::string render(const Template& parts, const Site& site, bool brief = false);
  Finding make_finding(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options);

  // Why a saving is below what the rule's terms ask for, for the finding's method.
  std::string limited_note(double gpu_ms, double other_ms, const StepClaims::Grant& granted) const;

  // A transform's events: the group's, or (`select:`) every event of another selection.
  std::vector<EventIndex> transform_events(const CompiledRule& rule, const std::string& selection, const Group& group);

  const Analysis& a_;
  const Timeline& tl_;
  const Events& ev_;
  const EventLookup& lookup_;
  std::vector<uint8_t>& claimed_;
  StepClaims& step_claims_;
  size_t steps_ = 1;
  double step_period_ms_ = 0;

  const CompiledRule* rule_ = nullptr;
  std::vector<double> thresholds_;
  bool below_noise_floor_ = false;
  std::vector<std::vector<EventIndex>> selected_;
  std::vector<TrackIndex> indexes_;
  std::vector<bool> indexed_;
  std::vector<Group> groups_;
  size_t group_ = 0;
  std::vector<std::vector<std::vector<uint32_t>>> idle_gaps_;
  std::vector<bool> idle_ready_;
  // Per event, kNone but while one of these runs: idle_gaps (the group an event stands for) and
  // site_culprits (a group member's position in the group). Each resets what it set.
  std::vector<uint32_t> event_mark_;
  std::vector<std::optional<double>> group_values_;
  std::vector<std::optional<double>> trace_values_;
};

}  // namespace ptadvise::rule_evaluation
