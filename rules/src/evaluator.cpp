// Evaluating compiled rules on an analysed timeline: which rules run on a trace, in which order, and the
// run of one rule (evaluator.h says where its parts are).
#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "evaluator.h"
#include "ledger_text.h"
#include "ptadvise/cores.h"

namespace ptadvise {

namespace rule_evaluation {

EventLookup::EventLookup(const Analysis& analysis) {
  const Events& events = analysis.timeline->events;
  const std::vector<IdleGap>& idle = analysis.idle;
  stretch_ns.assign(idle.size(), 0);
  for (size_t first = 0; first < idle.size();) {
    size_t last = first;
    while (last + 1 < idle.size() && Evaluator::contiguous(idle[last], idle[last + 1])) ++last;
    int64_t length = idle[last].end_ns - idle[first].start_ns;
    for (size_t k = first; k <= last; ++k) stretch_ns[k] = length;
    first = last + 1;
  }
  std::vector<size_t> per_kind(static_cast<size_t>(EventKind::Other) + 1, 0);
  for (EventKind kind : events.kind) ++per_kind[static_cast<size_t>(kind)];
  events_by_kind.resize(per_kind.size());
  for (size_t kind = 0; kind < per_kind.size(); ++kind) events_by_kind[kind].reserve(per_kind[kind]);
  for (EventIndex i = 0; i < events.size(); ++i) events_by_kind[static_cast<size_t>(events.kind[i])].push_back(i);
  // The events grouped by name (a counting sort: stable, so each name's events stay in order).
  const size_t strings = analysis.timeline->strings.size();
  name_first.assign(strings + 1, 0);
  name_kinds.assign(strings, 0);
  for (EventIndex i = 0; i < events.size(); ++i) {
    const StringId name = events.name[i];
    if (name >= strings) {  // not interned: selections by name scan the events (select)
      event_names.clear();
      return;
    }
    if (name_first[name + 1]++ == 0) event_names.push_back(name);
    name_kinds[name] |= 1u << static_cast<unsigned>(events.kind[i]);
  }
  std::sort(event_names.begin(), event_names.end());
  for (size_t id = 0; id < strings; ++id) name_first[id + 1] += name_first[id];
  events_by_name.resize(events.size());
  std::vector<uint32_t> next(name_first.begin(), name_first.end() - 1);
  for (EventIndex i = 0; i < events.size(); ++i) events_by_name[next[events.name[i]]++] = i;
}

Evaluator::Evaluator(const Analysis& analysis, const EventLookup& lookup, std::vector<uint8_t>& claimed,
                     StepClaims& step_claims)
    : a_(analysis), tl_(*analysis.timeline), ev_(analysis.timeline->events), lookup_(lookup), claimed_(claimed),
      step_claims_(step_claims) {
  // Per-step figures describe the steady-state steps: divided by their count, percentages by their
  // mean period (never a mean over one set of steps divided by a median over another).
  steps_ = std::max<size_t>(1, a_.steady_step_count());
  step_period_ms_ = a_.step_period_ns() / 1e6;
}

PreparedRule Evaluator::prepare(const CompiledRule& rule) {
  rule_ = &rule;
  selected_.assign(rule.selections.size(), {});
  indexes_.assign(rule.selections.size(), {});
  indexed_.assign(rule.selections.size(), false);
  for (size_t s = 0; s < rule.selections.size(); ++s) selected_[s] = select(rule.selections[s]);
  PreparedRule prepared;
  prepared.groups = make_groups(rule);
  prepared.selected = std::move(selected_);
  return prepared;
}

std::vector<Finding> Evaluator::finish(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options,
                                       PreparedRule prepared) {
  rule_ = &rule;
  thresholds_.clear();
  auto overrides = options.thresholds.find(info.id);
  for (const auto& threshold : rule.thresholds) {
    double value = threshold.value;
    if (overrides != options.thresholds.end()) {
      auto found = overrides->second.find(threshold.name);
      if (found != overrides->second.end()) value = found->second;
    }
    thresholds_.push_back(value);
  }
  // The track indexes of the sequence predicates stay with prepare(): only selections use them.
  selected_ = std::move(prepared.selected);
  groups_ = std::move(prepared.groups);
  idle_gaps_.assign(rule.metrics.size(), {});
  idle_ready_.assign(rule.metrics.size(), false);
  trace_values_.assign(rule.metrics.size(), std::nullopt);

  std::vector<Finding> findings;
  for (size_t g = 0; g < groups_.size(); ++g) {
    group_ = g;
    group_values_.assign(rule.metrics.size(), std::nullopt);
    if (rule.when && !holds(*rule.when)) continue;
    Finding finding = make_finding(info, rule, options);
    if (below_noise_floor_) continue;
    findings.push_back(std::move(finding));
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& x, const Finding& y) { return x.saving_ms_per_step > y.saving_ms_per_step; });
  return findings;
}

}  // namespace rule_evaluation

namespace {

// Runs the rules `runnable` names, in that order. With several threads, the rules' selections and groups
// (PreparedRule) are made ahead on all of them while this thread makes each rule's findings in order, as
// soon as that rule is prepared: the findings are the same on any number of threads.
std::vector<Finding> run_rules(const std::vector<RuleInfo>& infos,
                               const std::vector<std::shared_ptr<const CompiledRule>>& compiled,
                               const std::vector<size_t>& runnable, const Analysis& analysis,
                               const EvaluateOptions& options) {
  const rule_evaluation::EventLookup lookup(analysis);
  std::vector<uint8_t> claimed(analysis.idle.size(), 0);
  StepClaims step_claims(analysis);
  rule_evaluation::Evaluator evaluator(analysis, lookup, claimed, step_claims);
  std::vector<Finding> findings;
  auto add = [&](size_t r, rule_evaluation::PreparedRule prepared) {
    auto found = evaluator.finish(infos[r], *compiled[r], options, std::move(prepared));
    findings.insert(findings.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  };
  const unsigned threads = std::min<size_t>(options.threads == 0 ? usable_cores() : options.threads, runnable.size());
  if (threads <= 1) {
    for (size_t r : runnable) add(r, evaluator.prepare(*compiled[r]));
    return findings;
  }
  // Slots in runnable's order; a rule is prepared by whichever thread takes it first (`next`), this one
  // included while the rule it needs next is not ready. Helpers stay at most `threads` rules ahead of the
  // rule whose findings are being made: a prepared rule holds its selections (megabytes on a large trace).
  const size_t count = runnable.size();
  std::vector<std::optional<rule_evaluation::PreparedRule>> slots(count);
  size_t next = 0, finishing = 0;  // under `lock`
  std::mutex lock;
  std::condition_variable changed;
  std::exception_ptr failure;  // out of memory on a helper: rethrown here
  auto prepare_one = [&](rule_evaluation::Evaluator& on, size_t k) {
    rule_evaluation::PreparedRule prepared = on.prepare(*compiled[runnable[k]]);
    std::lock_guard guard(lock);
    slots[k] = std::move(prepared);
    changed.notify_all();
  };
  auto helper = [&] {
    try {
      std::vector<uint8_t> unused_claims;  // prepare() claims nothing
      rule_evaluation::Evaluator own(analysis, lookup, unused_claims, step_claims);
      while (true) {
        size_t k = 0;
        {
          std::unique_lock guard(lock);
          changed.wait(guard, [&] { return next >= count || next <= finishing + threads; });
          if (next >= count) return;
          k = next++;
        }
        prepare_one(own, k);
      }
    } catch (...) {
      std::lock_guard guard(lock);
      if (!failure) failure = std::current_exception();
      next = count;
      changed.notify_all();
    }
  };
  std::vector<std::jthread> helpers;
  try {
    for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(helper);
  } catch (const std::system_error&) {
    // fewer threads to be had: this one prepares what the others do not
  }
  try {
    for (size_t k = 0; k < count; ++k) {
      std::unique_lock guard(lock);
      finishing = k;
      changed.notify_all();
      while (!slots[k] && !failure) {
        if (next < count) {
          const size_t mine = next++;
          guard.unlock();
          prepare_one(evaluator, mine);
          guard.lock();
        } else {
          changed.wait(guard, [&] { return slots[k].has_value() || failure != nullptr; });
        }
      }
      if (failure) break;
      rule_evaluation::PreparedRule prepared = std::move(*slots[k]);
      slots[k].reset();
      guard.unlock();
      add(runnable[k], std::move(prepared));
    }
  } catch (...) {
    std::lock_guard guard(lock);
    next = count;  // the helpers stop after the rule they are preparing
    changed.notify_all();
    throw;
  }
  {
    std::lock_guard guard(lock);
    next = count;
    changed.notify_all();
  }
  helpers.clear();  // joins
  if (failure) std::rethrow_exception(failure);
  return findings;
}

bool mentions(const std::vector<std::string>& list, const RuleInfo& info) {
  for (const auto& entry : list) {
    std::string wanted = ascii_lower(entry);
    if (wanted == ascii_lower(info.id) || wanted == ascii_lower(info.name)) return true;
    for (const auto& tag : info.tags) {
      if (wanted == ascii_lower(tag)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Finding> evaluate(const RuleSet& rules, const Analysis& analysis, const EvaluateOptions& options,
                              Coverage* coverage) {
  std::vector<Finding> findings;
  if (analysis.timeline == nullptr) return findings;
  // What this trace offers the rules.
  const Timeline& timeline = *analysis.timeline;
  const bool has_gpu = !analysis.devices.empty();
  bool has_stacks = false, has_memory_events = false;  // one pass over the kinds, stopping once both show
  for (EventKind kind : timeline.events.kind) {
    has_stacks = has_stacks || kind == EventKind::PythonFunction;
    has_memory_events = has_memory_events || kind == EventKind::MemoryInstant;
    if (has_stacks && has_memory_events) break;
  }
  if (!has_stacks) has_stacks = has_call_stacks(timeline);
  bool has_properties = false, has_memory_size = false;
  for (const DeviceInfo& device : timeline.devices) {
    has_properties = has_properties || device.compute_major >= 0;
    has_memory_size = has_memory_size || device.total_global_mem > 0;
  }
  // What a rule may need and the trace not hold, in the order a rule lacking several is counted under.
  struct Lack {
    RuleNeed need;
    bool present;
    size_t Coverage::*counter;
    const char* reason;
  };
  const Lack lacks[] = {
      {kNeedsGpu, has_gpu, &Coverage::no_gpu, "no GPU activity"},
      {kNeedsStacks, has_stacks, &Coverage::no_stacks, "no Python stacks"},
      {kNeedsDeviceProperties, has_properties, &Coverage::no_device_properties, "no device properties"},
      {kNeedsMemorySize, has_memory_size, &Coverage::no_device_properties, "no GPU memory size"},
      {kNeedsMemoryEvents, has_memory_events, &Coverage::no_memory_events, "no memory events"},
  };
  Coverage counted;
  std::vector<size_t> runnable;  // rule indexes, in the order their findings are made
  // Root causes (`order: first`) claim idle time before the rules for its symptoms; catch-all rules
  // (`order: last`) run after the specific ones and see only the idle time left unclaimed.
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t r = 0; r < rules.infos_.size(); ++r) {
      const RuleInfo& info = rules.infos_[r];
      const CompiledRule& rule = *rules.compiled_[r];
      const int rule_pass = rule.order_first ? 0 : rule.order_last ? 2 : 1;
      if (rule_pass != pass) continue;
      if (!options.only.empty() && !mentions(options.only, info)) continue;
      if (mentions(options.skip, info)) continue;
      const Lack* lack = std::find_if(std::begin(lacks), std::end(lacks), [&](const Lack& l) {
        return (info.needs & l.need) && !l.present;
      });
      if (lack != std::end(lacks)) {
        ++(counted.*lack->counter);
        counted.not_run.emplace_back(info.id, lack->reason);
        continue;
      }
      // Every rule measures steady steps (even the warm-up rule compares with their period).
      if (!analysis.steady_state) {
        ++counted.no_steady_state;
        counted.not_run.emplace_back(info.id, "no steady step");
        continue;
      }
      ++counted.ran;
      runnable.push_back(r);
    }
  }
  if (!runnable.empty()) findings = run_rules(rules.infos_, rules.compiled_, runnable, analysis, options);
  if (options.predict) predict_findings(analysis, findings);  // predictions by replay (predict.cpp)
  std::sort(counted.not_run.begin(), counted.not_run.end());
  if (coverage) *coverage = counted;
  return findings;
}

}  // namespace ptadvise