// Internal to rules/: compiles one rule document into a CompiledRule (docs/RULE_LANGUAGE.md). The members
// are defined by responsibility: rule_compiler.cpp (the rule, its docs, thresholds, group, saving and
// tests), compile_selectors.cpp (selections) and compile_metrics.cpp (metrics, idle, conditions, templates).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "name_matcher.h"
#include "rule_model.h"
#include "rule_reader.h"

namespace ptadvise::rule_loading {

class RuleCompiler {
 public:
  RuleCompiler(const Reader& reader, const YAML::Node& root) : r_(reader), root_(root) {}

  void compile(RuleInfo& info, CompiledRule& rule);

  // What a trace must hold for the rule to check anything (RuleNeed).
  static uint8_t needs_of(const CompiledRule& rule);

 private:
  void compile_docs(RuleDocs& docs);
  void compile_thresholds(CompiledRule& rule);

  // The noise floor every rule with a saving has (docs/RULE_LANGUAGE.md "Noise floor"); a rule file may
  // set its own values under the same names, and a configuration may override them like any threshold.
  static void add_noise_floor(CompiledRule& rule);
  NameMatcher compile_names(const YAML::Node& node, const std::string& key);
  void compile_selections(CompiledRule& rule);

  // `family:` / `exclude_family:` (docs/KERNEL_FAMILIES.md): kernel families select kernel events only.
  void compile_families(const YAML::Node& node, const std::string& key, Selection& selection);
  Selection compile_selector(const YAML::Node& node, const std::string& key, std::vector<size_t>& depends);
  ArgPredicate compile_arg(const YAML::Node& node, const std::string& key);
  void compile_group(CompiledRule& rule);
  void declare_name(const YAML::Node& at, const std::string& key, const std::string& name);
  size_t add_metric(CompiledRule& rule, Metric metric);

  // Registers built-ins, thresholds, the primary selection's site metrics and the rule's own metrics;
  // operands are resolved afterwards so metrics may use each other in any order.
  void declare_metrics(CompiledRule& rule);
  size_t selection_operand(const YAML::Node& node, const std::string& key);
  size_t metric_operand(const YAML::Node& node, const std::string& key);
  void resolve_metrics(CompiledRule& rule);

  // A list of idle causes (or `any`) as bits of 1 << IdleCause. `any` is every cause with something to
  // recover in the traced program: graph-capture (the GPU idles by design while graphs are recorded) and
  // external-wait (the host waits for work the trace does not show) only when named.
  static uint32_t any_cause_bits();
  uint32_t compile_causes(const YAML::Node& causes, const std::string& key);
  void compile_idle(CompiledRule& rule, Metric& metric, const YAML::Node& value, const std::string& key);
  void check_cycles(const CompiledRule& rule);

  // Operand of a comparison: a metric, threshold or built-in name, or a number.
  size_t operand(CompiledRule& rule, const YAML::Node& at, const std::string& key, const std::string& token);
  Condition compile_condition(CompiledRule& rule, const YAML::Node& node, const std::string& key);
  Template compile_template(const CompiledRule& rule, const YAML::Node& node, const std::string& key);
  void compile_saving(CompiledRule& rule);
  void compile_tests(CompiledRule& rule);

  struct Pending {
    YAML::Node key;
    YAML::Node definition;
    size_t index;
  };

  const Reader& r_;
  const YAML::Node root_;
  std::map<std::string, size_t, std::less<>> selection_index_;
  std::map<std::string, size_t, std::less<>> metric_index_;
  std::set<std::string, std::less<>> names_;
  std::vector<Pending> pending_;
};

}  // namespace ptadvise::rule_loading
