// Evaluating compiled rules on an analysed timeline: which rules run on a trace, in which order, and the
// run of one rule (evaluator.h says where its parts are).
#include <algorithm>
#include <cctype>
#include <iterator>

#include "evaluator.h"
#include "ledger_text.h"

namespace ptadvise {

namespace rule_evaluation {

Evaluator::Evaluator(const Analysis& analysis, std::vector<uint8_t>& claimed, StepClaims& step_claims)
    : a_(analysis), tl_(*analysis.timeline), ev_(analysis.timeline->events), claimed_(claimed),
      step_claims_(step_claims) {
  // Per-step figures describe the steady-state steps: divided by their count, percentages by their
  // mean period (never a mean over one set of steps divided by a median over another).
  steps_ = std::max<size_t>(1, a_.steady_step_count());
  step_period_ms_ = a_.step_period_ns() / 1e6;
  // Ledger entries are pieces of longer idle stretches (split where the host's activity changes); the
  // length of the whole stretch tells a launch gap of a few µs from a stall.
  stretch_ns_.assign(a_.idle.size(), 0);
  for (size_t first = 0; first < a_.idle.size();) {
    size_t last = first;
    while (last + 1 < a_.idle.size() && contiguous(a_.idle[last], a_.idle[last + 1])) ++last;
    int64_t length = a_.idle[last].end_ns - a_.idle[first].start_ns;
    for (size_t k = first; k <= last; ++k) stretch_ns_[k] = length;
    first = last + 1;
  }
  std::vector<size_t> per_kind(static_cast<size_t>(EventKind::Other) + 1, 0);
  for (EventKind kind : ev_.kind) ++per_kind[static_cast<size_t>(kind)];
  events_by_kind_.resize(per_kind.size());
  for (size_t kind = 0; kind < per_kind.size(); ++kind) events_by_kind_[kind].reserve(per_kind[kind]);
  for (EventIndex i = 0; i < ev_.size(); ++i) events_by_kind_[static_cast<size_t>(ev_.kind[i])].push_back(i);
  // The events grouped by name (a counting sort: stable, so each name's events stay in order).
  const size_t strings = tl_.strings.size();
  name_first_.assign(strings + 1, 0);
  name_kinds_.assign(strings, 0);
  for (EventIndex i = 0; i < ev_.size(); ++i) {
    const StringId name = ev_.name[i];
    if (name >= strings) {  // not interned: selections by name scan the events (select)
      event_names_.clear();
      return;
    }
    if (name_first_[name + 1]++ == 0) event_names_.push_back(name);
    name_kinds_[name] |= 1u << static_cast<unsigned>(ev_.kind[i]);
  }
  std::sort(event_names_.begin(), event_names_.end());
  for (size_t id = 0; id < strings; ++id) name_first_[id + 1] += name_first_[id];
  events_by_name_.resize(ev_.size());
  std::vector<uint32_t> next(name_first_.begin(), name_first_.end() - 1);
  for (EventIndex i = 0; i < ev_.size(); ++i) events_by_name_[next[ev_.name[i]]++] = i;
}

std::vector<Finding> Evaluator::run(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options) {
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
  selected_.assign(rule.selections.size(), {});
  indexes_.assign(rule.selections.size(), {});
  indexed_.assign(rule.selections.size(), false);
  for (size_t s = 0; s < rule.selections.size(); ++s) selected_[s] = select(rule.selections[s]);

  groups_ = make_groups(rule);
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

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool mentions(const std::vector<std::string>& list, const RuleInfo& info) {
  for (const auto& entry : list) {
    std::string wanted = lower(entry);
    if (wanted == lower(info.id) || wanted == lower(info.name)) return true;
    for (const auto& tag : info.tags) {
      if (wanted == lower(tag)) return true;
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
  bool has_stacks = false;
  for (EventKind kind : timeline.events.kind) {
    if (kind == EventKind::PythonFunction) {
      has_stacks = true;
      break;
    }
  }
  if (!has_stacks) has_stacks = has_call_stacks(timeline);
  bool has_properties = false;
  for (const DeviceInfo& device : timeline.devices) has_properties = has_properties || device.compute_major >= 0;
  Coverage counted;
  std::vector<uint8_t> claimed(analysis.idle.size(), 0);
  StepClaims step_claims(analysis);
  rule_evaluation::Evaluator evaluator(analysis, claimed, step_claims);
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
      if ((info.needs & kNeedsGpu) && !has_gpu) {
        ++counted.no_gpu;
        counted.not_run.emplace_back(info.id, "no GPU activity");
        continue;
      }
      if ((info.needs & kNeedsStacks) && !has_stacks) {
        ++counted.no_stacks;
        counted.not_run.emplace_back(info.id, "no Python stacks");
        continue;
      }
      if ((info.needs & kNeedsDeviceProperties) && !has_properties) {
        ++counted.no_device_properties;
        counted.not_run.emplace_back(info.id, "no device properties");
        continue;
      }
      // Every rule measures steady steps (even the warm-up rule compares with their period).
      if (!analysis.steady_state) {
        ++counted.no_steady_state;
        counted.not_run.emplace_back(info.id, "no steady step");
        continue;
      }
      ++counted.ran;
      auto found = evaluator.run(info, rule, options);
      findings.insert(findings.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    }
  }
  if (options.predict) predict_findings(analysis, findings);  // predictions by replay (predict.cpp)
  std::sort(counted.not_run.begin(), counted.not_run.end());
  if (coverage) *coverage = counted;
  return findings;
}

}  // namespace ptadvise