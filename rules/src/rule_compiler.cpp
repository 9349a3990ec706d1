// The rule as a whole: its header keys, docs, thresholds and noise floor, group, saving and tests.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "rule_compiler.h"

namespace ptadvise::rule_loading {

namespace fs = std::filesystem;

void RuleCompiler::compile(RuleInfo& info, CompiledRule& rule) {
  r_.expect_keys(root_, "",
                {"id", "name", "severity", "tags", "summary", "fix", "docs", "order", "thresholds", "select",
                 "group", "metrics", "when", "message", "short_message", "short_fix", "saving", "tests", "transform"});
  for (const char* required : {"id", "name", "severity", "tags", "summary", "fix", "docs", "select", "message",
                               "saving"}) {
    if (!root_[required]) r_.fail(root_, required, "missing required key");
  }
  info.file = r_.file();
  info.id = r_.text(root_["id"], "id");
  if (!is_rule_id(info.id)) r_.fail(root_["id"], "id", "expected upper-case letters then digits, like PTA101");
  info.name = r_.text(root_["name"], "name");
  if (!is_kebab(info.name)) {
    r_.fail(root_["name"], "name", "expected lower-case words joined by '-', like sync-in-step");
  }
  std::string severity = r_.scalar(root_["severity"], "severity");
  auto parsed_severity = parse_severity(severity);
  if (!parsed_severity) r_.fail(root_["severity"], "severity", "expected info, warning or error, got '" + severity + "'");
  info.severity = *parsed_severity;
  if (!root_["tags"].IsSequence()) r_.fail(root_["tags"], "tags", "expected a non-empty list of tags");
  info.tags = r_.strings(root_["tags"], "tags");
  for (size_t i = 0; i < info.tags.size(); ++i) {
    if (!is_kebab(info.tags[i])) r_.fail(root_["tags"][i], "tags", "expected lower-case words joined by '-'");
  }
  info.summary = r_.text(root_["summary"], "summary");
  info.fix = r_.text(root_["fix"], "fix");
  if (auto short_fix = root_["short_fix"]) {
    info.short_fix = r_.text(short_fix, "short_fix");
    if (text_columns(info.short_fix) > kShortFixColumns) {
      r_.fail(short_fix, "short_fix",
              "expected at most " + std::to_string(kShortFixColumns) + " characters (it is one line of the text report), got " +
                  std::to_string(text_columns(info.short_fix)));
    }
  }
  compile_docs(info.docs);
  if (auto order = root_["order"]) {
    std::string value = r_.scalar(order, "order");
    if (value != "first" && value != "normal" && value != "last") {
      r_.fail(order, "order", "expected first, normal or last, got '" + value + "'");
    }
    rule.order_first = value == "first";
    rule.order_last = value == "last";
  }

  compile_thresholds(rule);
  add_noise_floor(rule);
  compile_selections(rule);
  compile_group(rule);
  declare_metrics(rule);
  resolve_metrics(rule);
  if (auto when = root_["when"]) rule.when = compile_condition(rule, when, "when");
  rule.message = compile_template(rule, root_["message"], "message");
  if (auto short_message = root_["short_message"]) rule.short_message = compile_template(rule, short_message, "short_message");
  compile_saving(rule);
  if (auto transform = root_["transform"]) {
    if (auto error = parse_transform(transform, rule.transform)) r_.fail_at(error->mark, error->key, error->what);
    for (const std::string& name : rule.transform.selections) {
      if (!name.empty() && std::none_of(rule.selections.begin(), rule.selections.end(),
                                        [&name](const Selection& s) { return s.name == name; })) {
        r_.fail(transform, "transform.apply.select", "no selection named '" + name + "'");
      }
    }
  }
  compile_tests(rule);

  for (const auto& threshold : rule.thresholds) {
    info.thresholds.push_back({threshold.name, threshold.value, threshold.unit, threshold.doc});
  }
  info.saving_method = rule.saving_method;
  info.transform = describe_transform(rule.transform);
  info.transform_method = rule.transform.method;
  info.needs = needs_of(rule);
}

// What a trace must hold for the rule to check anything (RuleNeed).
uint8_t RuleCompiler::needs_of(const CompiledRule& rule) {
  constexpr uint32_t kGpuKinds = (1u << static_cast<unsigned>(EventKind::Kernel)) |
                                 (1u << static_cast<unsigned>(EventKind::Memcpy)) |
                                 (1u << static_cast<unsigned>(EventKind::Memset)) |
                                 (1u << static_cast<unsigned>(EventKind::Sync)) |
                                 (1u << static_cast<unsigned>(EventKind::GpuAnnotation));
  constexpr uint32_t kPython = 1u << static_cast<unsigned>(EventKind::PythonFunction);
  constexpr uint32_t kMemoryKind = 1u << static_cast<unsigned>(EventKind::MemoryInstant);
  uint8_t needs = 0;
  // The kinds a selection can yield, through unions.
  std::function<uint32_t(size_t)> kinds_of = [&](size_t s) -> uint32_t {
    const Selection& selection = rule.selections[s];
    if (selection.union_of.empty()) return selection.kinds == 0 ? ~0u : selection.kinds;
    uint32_t kinds = 0;
    for (size_t member : selection.union_of) kinds |= kinds_of(member);
    return kinds;
  };
  if (!rule.selections.empty() && (kinds_of(rule.primary) & ~kGpuKinds) == 0) needs |= kNeedsGpu;
  // A rule grouping memory events alone finds nothing in a trace recorded without them: say so.
  if (!rule.selections.empty() && kinds_of(rule.primary) == kMemoryKind) needs |= kNeedsMemoryEvents;
  // Every built-in value is declared in every rule: only the metrics the rule uses count.
  std::vector<uint8_t> used(rule.metrics.size(), 0);
  std::function<void(size_t)> use = [&](size_t m) {
    if (m >= used.size() || used[m]) return;
    used[m] = 1;
    for (size_t operand : rule.metrics[m].operands) use(operand);
  };
  std::function<void(const Condition&)> use_condition = [&](const Condition& c) {
    if (c.kind == Condition::Kind::Compare || c.kind == Condition::Kind::Truthy) {
      use(c.left);
      if (c.kind == Condition::Kind::Compare) use(c.right);
    }
    for (const Condition& child : c.children) use_condition(child);
  };
  if (rule.when) use_condition(*rule.when);
  for (const SavingTerm& term : rule.saving) {
    use(term.metric);
    if (term.when) use_condition(*term.when);
  }
  for (const Template* message : {&rule.message, &rule.short_message}) {
    for (const TemplatePart& part : *message) {
      if (part.kind == TemplatePart::Kind::Metric) use(part.metric);
    }
  }
  bool idle = false, cpu_fallback = false;
  for (size_t m = 0; m < rule.metrics.size(); ++m) {
    if (!used[m]) continue;
    const Metric& metric = rule.metrics[m];
    idle = idle || metric.kind == MetricKind::Idle;
    if (metric.kind == MetricKind::Builtin) {
      if (metric.builtin == "has_gpu") cpu_fallback = true;
      if (metric.builtin == "compute_capability") needs |= kNeedsDeviceProperties;
      if (metric.builtin == "gpu_memory_bytes") needs |= kNeedsMemorySize;
    }
  }
  if (idle && !cpu_fallback) needs |= kNeedsGpu;
  for (const Selection& selection : rule.selections) {
    if (selection.kinds == kPython) needs |= kNeedsStacks;
  }
  return needs;
}

void RuleCompiler::compile_docs(RuleDocs& docs) {
  const YAML::Node node = root_["docs"];
  r_.expect_keys(node, "docs", {"what", "why", "example", "fix"});
  for (const char* section : {"what", "why", "example", "fix"}) {
    if (!node[section]) r_.fail(node, std::string("docs.") + section, "missing required section");
  }
  docs.what = r_.text(node["what"], "docs.what");
  docs.why = r_.text(node["why"], "docs.why");
  docs.example = r_.text(node["example"], "docs.example");
  docs.fix = r_.text(node["fix"], "docs.fix");
}

void RuleCompiler::compile_thresholds(CompiledRule& rule) {
  const YAML::Node node = root_["thresholds"];
  if (!node) return;
  if (!node.IsMap()) r_.fail(node, "thresholds", "expected a mapping of threshold name to {value, unit, doc}");
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string name = r_.scalar(it->first, "thresholds");
    std::string key = "thresholds." + name;
    if (!is_identifier(name)) r_.fail(it->first, key, "expected a name of letters, digits and '_'");
    r_.expect_keys(it->second, key, {"value", "unit", "doc"});
    if (!it->second["value"]) r_.fail(it->second, key + ".value", "missing required key");
    if (!it->second["doc"]) r_.fail(it->second, key + ".doc", "missing required key (why this value)");
    Threshold threshold;
    threshold.name = name;
    threshold.value = r_.number(it->second["value"], key + ".value");
    if (it->second["unit"]) threshold.unit = r_.text(it->second["unit"], key + ".unit");
    threshold.doc = r_.text(it->second["doc"], key + ".doc");
    declare_name(it->first, key, name);
    rule.thresholds.push_back(std::move(threshold));
  }
}

// The noise floor every rule with a saving has (docs/RULE_LANGUAGE.md "Noise floor"); a rule file may
// set its own values under the same names, and a configuration may override them like any threshold.
void RuleCompiler::add_noise_floor(CompiledRule& rule) {
  auto declared = [&rule](const char* name) {
    return std::any_of(rule.thresholds.begin(), rule.thresholds.end(),
                       [name](const Threshold& t) { return t.name == name; });
  };
  if (!declared(kMinSavingMs)) {
    rule.thresholds.push_back({kMinSavingMs, kDefaultMinSavingMs, "ms per step",
                               "Noise floor: a finding must save at least this much per step (default for every "
                               "rule with a saving)."});
  }
  if (!declared(kMinSavingPct)) {
    rule.thresholds.push_back({kMinSavingPct, kDefaultMinSavingPct, "% of step",
                               "Noise floor: and at least this share of the step period (default for every rule "
                               "with a saving)."});
  }
}

void RuleCompiler::compile_group(CompiledRule& rule) {
  const YAML::Node node = root_["group"];
  if (!node) return;
  r_.expect_keys(node, "group", {"select", "by"});
  if (auto select = node["select"]) {
    std::string name = r_.scalar(select, "group.select");
    auto found = selection_index_.find(name);
    if (found == selection_index_.end()) r_.fail(select, "group.select", "unknown selection '" + name + "'");
    rule.primary = found->second;
  }
  if (auto by = node["by"]) {
    static const std::map<std::string, SiteKey, std::less<>> keys = {
        {"op", SiteKey::Op},         {"op_chain", SiteKey::OpChain}, {"kernel", SiteKey::Kernel},
        {"name", SiteKey::Name},     {"source", SiteKey::Source},    {"bytes", SiteKey::Bytes}};
    if (!by.IsSequence()) r_.fail(by, "group.by", "expected a list of site keys (op, op_chain, kernel, name, source, bytes)");
    for (const auto& item : by) {
      std::string key = r_.scalar(item, "group.by");
      auto found = keys.find(key);
      if (found == keys.end()) {
        r_.fail(item, "group.by", "unknown site key '" + key + "'; expected op, op_chain, kernel, name, source or bytes");
      }
      rule.group_by.push_back(found->second);
    }
  }
}

void RuleCompiler::declare_name(const YAML::Node& at, const std::string& key, const std::string& name) {
  if (names_.count(name)) r_.fail(at, key, "'" + name + "' is already defined (metric, threshold and built-in names share one namespace)");
  names_.insert(name);
}

void RuleCompiler::compile_saving(CompiledRule& rule) {
  const YAML::Node node = root_["saving"];
  r_.expect_keys(node, "saving", {"ms_per_step", "method", "confidence"});
  for (const char* required : {"ms_per_step", "method"}) {
    if (!node[required]) r_.fail(node, std::string("saving.") + required, "missing required key");
  }
  const YAML::Node terms = node["ms_per_step"];
  auto add_term = [&](const YAML::Node& item) {
    SavingTerm term;
    if (item.IsScalar()) {
      term.metric = metric_operand(item, "saving.ms_per_step");
    } else {
      r_.expect_keys(item, "saving.ms_per_step", {"metric", "factor", "when"});
      if (!item["metric"]) r_.fail(item, "saving.ms_per_step.metric", "missing required key");
      term.metric = metric_operand(item["metric"], "saving.ms_per_step.metric");
      if (auto factor = item["factor"]) term.factor = r_.number(factor, "saving.ms_per_step.factor");
      if (auto when = item["when"]) term.when = compile_condition(rule, when, "saving.ms_per_step.when");
    }
    rule.saving.push_back(std::move(term));
  };
  if (terms.IsSequence()) {
    if (terms.size() == 0) r_.fail(terms, "saving.ms_per_step", "expected at least one term");
    for (const auto& item : terms) add_term(item);
  } else {
    add_term(terms);
  }
  rule.saving_method = r_.text(node["method"], "saving.method");
  if (auto confidence = node["confidence"]) {
    std::string value = r_.scalar(confidence, "saving.confidence");
    if (value == "low") rule.confidence = Confidence::Low;
    else if (value == "medium") rule.confidence = Confidence::Medium;
    else if (value == "high") rule.confidence = Confidence::High;
    else r_.fail(confidence, "saving.confidence", "expected low, medium or high, got '" + value + "'");
  }
}

void RuleCompiler::compile_tests(CompiledRule& rule) {
  const YAML::Node node = root_["tests"];
  if (!node) return;
  if (!node.IsSequence()) r_.fail(node, "tests", "expected a list of {trace, findings, expect}");
  fs::path base = fs::path(r_.file()).parent_path();
  for (const auto& item : node) {
    r_.expect_keys(item, "tests", {"trace", "findings", "expect", "thresholds"});
    if (!item["trace"] || !item["findings"]) r_.fail(item, "tests", "expected {trace: FILE, findings: COUNT}");
    RuleTest test;
    test.trace = (base / r_.text(item["trace"], "tests.trace")).lexically_normal().string();
    double findings = r_.number(item["findings"], "tests.findings");
    if (findings < 0 || findings != std::floor(findings) || findings > 1e6) {
      r_.fail(item["findings"], "tests.findings", "expected a count");
    }
    test.findings = static_cast<size_t>(findings);
    if (auto overrides = item["thresholds"]) {
      if (!overrides.IsMap()) r_.fail(overrides, "tests.thresholds", "expected a map of threshold name to number");
      for (auto it = overrides.begin(); it != overrides.end(); ++it) {
        std::string name = r_.scalar(it->first, "tests.thresholds");
        bool known = std::any_of(rule.thresholds.begin(), rule.thresholds.end(),
                                 [&name](const Threshold& t) { return t.name == name; });
        if (!known) r_.fail(it->first, "tests.thresholds." + name, "not a threshold of this rule");
        test.thresholds[name] = r_.number(it->second, "tests.thresholds." + name);
      }
    }
    if (auto expect = item["expect"]) {
      if (!expect.IsSequence()) r_.fail(expect, "tests.expect", "expected a list of expected findings");
      for (const auto& entry : expect) {
        r_.expect_keys(entry, "tests.expect",
                      {"op", "kernel", "message_contains", "count_per_step", "time_ms_per_step", "steps_present_pct",
                       "saving_ms_per_step", "saving_pct"});
        RuleTestFinding finding;
        for (auto it = entry.begin(); it != entry.end(); ++it) {
          const std::string field = it->first.Scalar();
          const std::string field_key = "tests.expect." + field;
          if (field == "op") finding.op = r_.text(it->second, field_key);
          else if (field == "kernel") finding.kernel = r_.text(it->second, field_key);
          else if (field == "message_contains") finding.message_contains = r_.text(it->second, field_key);
          else finding.numbers.emplace_back(field, r_.number(it->second, field_key));
        }
        test.expect.push_back(std::move(finding));
      }
      if (test.expect.size() > test.findings) {
        r_.fail(expect, "tests.expect", "more expected findings than `findings`");
      }
    }
    rule.tests.push_back(std::move(test));
  }
}

}  // namespace ptadvise::rule_loading
