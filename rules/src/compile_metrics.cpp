// Metrics (built-in, site, idle) and the conditions, operands and message templates that use them.
#include <functional>

#include "rule_compiler.h"

namespace ptadvise::rule_loading {

size_t RuleCompiler::add_metric(CompiledRule& rule, Metric metric) {
  metric_index_[metric.name] = rule.metrics.size();
  rule.metrics.push_back(std::move(metric));
  return rule.metrics.size() - 1;
}

// Registers built-ins, thresholds, the primary selection's site metrics and the rule's own metrics;
// operands are resolved afterwards so metrics may use each other in any order.
void RuleCompiler::declare_metrics(CompiledRule& rule) {
  for (const auto& [name, unit] : builtin_values()) {
    Metric metric;
    metric.name = name;
    metric.kind = MetricKind::Builtin;
    metric.unit = unit;
    metric.builtin = name;
    names_.insert(name);
    add_metric(rule, std::move(metric));
  }
  for (size_t i = 0; i < rule.thresholds.size(); ++i) {
    Metric metric;
    metric.name = rule.thresholds[i].name;
    metric.kind = MetricKind::Threshold;
    metric.unit = MetricUnit::Value;
    metric.threshold = i;
    add_metric(rule, std::move(metric));
  }
  const std::pair<const char*, std::pair<MetricKind, MetricUnit>> site_metrics[] = {
      {"count", {MetricKind::Count, MetricUnit::Count}},
      {"time_ms", {MetricKind::Time, MetricUnit::Ms}},
      {"max_ms", {MetricKind::Max, MetricUnit::Value}},
      {"bytes", {MetricKind::Bytes, MetricUnit::Bytes}},
      {"steps_present_pct", {MetricKind::StepsPresent, MetricUnit::Percent}},
      {"share_pct", {MetricKind::ShareOfStep, MetricUnit::Percent}},
  };
  for (const auto& [name, spec] : site_metrics) {
    Metric metric;
    metric.name = name;
    metric.kind = spec.first;
    metric.unit = spec.second;
    metric.selection = rule.primary;
    metric.site_scoped = true;
    if (names_.count(name)) r_.fail(root_["thresholds"], "thresholds." + std::string(name), "'" + std::string(name) + "' is a built-in name");
    names_.insert(name);
    add_metric(rule, std::move(metric));
  }
  const YAML::Node node = root_["metrics"];
  if (!node) return;
  if (!node.IsMap()) r_.fail(node, "metrics", "expected a mapping of metric name to definition");
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string name = r_.scalar(it->first, "metrics");
    std::string key = "metrics." + name;
    if (!is_identifier(name)) r_.fail(it->first, key, "expected a name of letters, digits and '_'");
    declare_name(it->first, key, name);
    Metric metric;
    metric.name = name;
    pending_.push_back({it->first, it->second, add_metric(rule, std::move(metric))});
  }
}

size_t RuleCompiler::selection_operand(const YAML::Node& node, const std::string& key) {
  std::string name = r_.scalar(node, key);
  auto found = selection_index_.find(name);
  if (found == selection_index_.end()) r_.fail(node, key, "unknown selection '" + name + "'");
  return found->second;
}

size_t RuleCompiler::metric_operand(const YAML::Node& node, const std::string& key) {
  std::string name = r_.scalar(node, key);
  auto found = metric_index_.find(name);
  if (found == metric_index_.end()) r_.fail(node, key, "unknown metric '" + name + "'");
  return found->second;
}

void RuleCompiler::resolve_metrics(CompiledRule& rule) {
  for (auto& [key_node, definition, index] : pending_) {
    std::string key = "metrics." + key_node.Scalar();
    if (!definition.IsMap() || definition.size() != 1) {
      r_.fail(definition, key, "expected one of {count|time|max|bytes|steps_present|share_of_step: SELECTION}, "
                               "{max_arg: {select, key}}, {idle: {...}}, {ratio: [A, B]}, {sum: [A, ...]}");
    }
    r_.expect_keys(definition, key,
                  {"count", "time", "max", "bytes", "steps_present", "share_of_step", "max_arg", "idle", "ratio", "sum"});
    const std::string kind = definition.begin()->first.Scalar();
    const YAML::Node value = definition.begin()->second;
    const std::string value_key = key + "." + kind;
    Metric& metric = rule.metrics[index];
    const std::pair<const char*, std::pair<MetricKind, MetricUnit>> simple[] = {
        {"count", {MetricKind::Count, MetricUnit::Count}},
        {"time", {MetricKind::Time, MetricUnit::Ms}},
        {"max", {MetricKind::Max, MetricUnit::Value}},
        {"bytes", {MetricKind::Bytes, MetricUnit::Bytes}},
        {"steps_present", {MetricKind::StepsPresent, MetricUnit::Percent}},
        {"share_of_step", {MetricKind::ShareOfStep, MetricUnit::Percent}}};
    bool done = false;
    for (const auto& [field, spec] : simple) {
      if (kind != field) continue;
      metric.kind = spec.first;
      metric.unit = spec.second;
      metric.selection = selection_operand(value, value_key);
      metric.site_scoped = metric.selection == rule.primary && !rule.group_by.empty();
      done = true;
    }
    if (done) {
    } else if (kind == "max_arg") {
      r_.expect_keys(value, value_key, {"select", "key"});
      if (!value["select"] || !value["key"]) r_.fail(value, value_key, "expected {select: SELECTION, key: ARG}");
      metric.kind = MetricKind::MaxArg;
      metric.unit = MetricUnit::Value;
      metric.selection = selection_operand(value["select"], value_key + ".select");
      metric.site_scoped = metric.selection == rule.primary && !rule.group_by.empty();
      metric.arg_key = r_.text(value["key"], value_key + ".key");
    } else if (kind == "idle") {
      compile_idle(rule, metric, value, value_key);
    } else {  // ratio, sum
      if (!value.IsSequence() || value.size() < 2 || (kind == "ratio" && value.size() != 2)) {
        r_.fail(value, value_key, kind == "ratio" ? "expected [NUMERATOR, DENOMINATOR]" : "expected a list of two or more metrics");
      }
      std::vector<size_t> operands;
      for (const auto& item : value) operands.push_back(metric_operand(item, value_key));
      metric.kind = kind == "ratio" ? MetricKind::Ratio : MetricKind::Sum;
      metric.unit = kind == "ratio" ? MetricUnit::Ratio : rule.metrics[operands[0]].unit;
      metric.operands = std::move(operands);
    }
  }
  // `<name>_pct` companions of per-step millisecond metrics.
  size_t count = rule.metrics.size();
  for (size_t i = 0; i < count; ++i) {
    if (rule.metrics[i].unit != MetricUnit::Ms) continue;
    std::string name = rule.metrics[i].name + "_pct";
    if (names_.count(name)) continue;  // an explicit metric of that name wins
    names_.insert(name);
    Metric metric;
    metric.name = name;
    metric.kind = MetricKind::Percent;
    metric.unit = MetricUnit::Percent;
    metric.operands = {i};
    add_metric(rule, std::move(metric));
  }
  check_cycles(rule);
}

// A list of idle causes (or `any`) as bits of 1 << IdleCause. `any` is every cause with something to
// recover in the traced program: graph-capture (the GPU idles by design while graphs are recorded) and
// external-wait (the host waits for work the trace does not show) only when named.
uint32_t RuleCompiler::any_cause_bits() {
  return ~0u & ~(1u << static_cast<unsigned>(IdleCause::GraphCapture)) &
         ~(1u << static_cast<unsigned>(IdleCause::ExternalWait)) & ~(1u << static_cast<unsigned>(IdleCause::WarmUp));
}

uint32_t RuleCompiler::compile_causes(const YAML::Node& causes, const std::string& key) {
  uint32_t bits = 0;
  std::vector<std::string> names = r_.strings(causes, key);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "any") {
      bits |= any_cause_bits();
      continue;
    }
    auto found = cause_names().find(names[i]);
    if (found == cause_names().end()) {
      r_.fail(causes.IsSequence() ? causes[i] : causes, key,
              "unknown idle cause '" + names[i] +
                  "'; expected any, sync, data-loader, launch-bound, cpu-work, untraced, graph-capture, external-wait or "
                  "warm-up");
    }
    bits |= 1u << static_cast<unsigned>(found->second);
  }
  return bits;
}

void RuleCompiler::compile_idle(CompiledRule& rule, Metric& metric, const YAML::Node& value, const std::string& key) {
  r_.expect_keys(value, key, {"causes", "culprits", "include_claimed", "refill", "max_stretch", "min_stretch", "stat"});
  if (auto bound = value["max_stretch"]) metric.max_stretch_ns = r_.duration_ns(bound, key + ".max_stretch");
  if (auto bound = value["min_stretch"]) metric.min_stretch_ns = r_.duration_ns(bound, key + ".min_stretch");
  metric.kind = MetricKind::Idle;
  metric.unit = MetricUnit::Ms;
  metric.idle_causes = 0;
  if (auto causes = value["causes"]) {
    metric.idle_causes = compile_causes(causes, key + ".causes");
  } else {
    metric.idle_causes = any_cause_bits();
  }
  if (auto culprits = value["culprits"]) {
    std::string name = r_.scalar(culprits, key + ".culprits");
    if (name == "site") {
      metric.culprits = Metric::Culprits::Site;
      metric.culprit_selection = rule.primary;
      metric.site_scoped = !rule.group_by.empty();
    } else {
      metric.culprits = Metric::Culprits::Selection;
      metric.culprit_selection = selection_operand(culprits, key + ".culprits");
    }
  }
  if (auto include = value["include_claimed"]) metric.include_claimed = r_.boolean(include, key + ".include_claimed");
  if (auto refill = value["refill"]) {
    metric.refill = r_.boolean(refill, key + ".refill");
    if (metric.refill && metric.culprits == Metric::Culprits::Any) {
      r_.fail(refill, key + ".refill", "needs culprits (site or a selection) to know whose stretch to extend");
    }
  }
  if (auto stat = value["stat"]) {
    std::string name = r_.scalar(stat, key + ".stat");
    if (name == "per_step") {
      metric.idle_stat = IdleStat::PerStep;
    } else if (name == "max_gap") {
      metric.idle_stat = IdleStat::MaxGap;
      metric.unit = MetricUnit::Value;
    } else if (name == "gap_every_step") {
      metric.idle_stat = IdleStat::GapEveryStep;
      metric.unit = MetricUnit::Value;
    } else {
      r_.fail(stat, key + ".stat", "expected per_step, max_gap or gap_every_step, got '" + name + "'");
    }
  }
}

void RuleCompiler::check_cycles(const CompiledRule& rule) {
  std::vector<int> state(rule.metrics.size(), 0);
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] == 2) return;
    if (state[i] == 1) {
      for (const auto& [node, definition, index] : pending_) {
        if (index == i) r_.fail(node, "metrics." + node.Scalar(), "metrics refer to each other in a cycle");
      }
      r_.fail(root_["metrics"], "metrics", "metrics refer to each other in a cycle");
    }
    state[i] = 1;
    for (size_t operand : rule.metrics[i].operands) visit(operand);
    state[i] = 2;
  };
  for (size_t i = 0; i < rule.metrics.size(); ++i) visit(i);
}

// Operand of a comparison: a metric, threshold or built-in name, or a number.
size_t RuleCompiler::operand(CompiledRule& rule, const YAML::Node& at, const std::string& key, const std::string& token) {
  auto found = metric_index_.find(token);
  if (found != metric_index_.end()) return found->second;
  auto number = parse_quantity(token, QuantityKind::Any);
  if (!number) r_.fail(at, key, "unknown name '" + token + "' (not a metric, threshold, built-in value or number)");
  Metric metric;
  metric.name = "#" + token;
  metric.kind = MetricKind::Literal;
  metric.unit = MetricUnit::Value;
  metric.literal = *number;
  return add_metric(rule, std::move(metric));
}

Condition RuleCompiler::compile_condition(CompiledRule& rule, const YAML::Node& node, const std::string& key) {
  Condition condition;
  if (node.IsScalar()) {
    std::istringstream words(node.Scalar());
    std::vector<std::string> tokens;
    for (std::string word; words >> word;) tokens.push_back(word);
    if (tokens.size() == 1) {
      condition.kind = Condition::Kind::Truthy;
      condition.left = operand(rule, node, key, tokens[0]);
      return condition;
    }
    static const std::map<std::string, CompareOp, std::less<>> ops = {
        {"<", CompareOp::Lt}, {"<=", CompareOp::Le}, {">", CompareOp::Gt},
        {">=", CompareOp::Ge}, {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}};
    if (tokens.size() != 3 || !ops.count(tokens[1])) {
      r_.fail(node, key, "expected 'NAME OP VALUE' with OP one of < <= > >= == !=, got '" + node.Scalar() + "'");
    }
    condition.kind = Condition::Kind::Compare;
    condition.left = operand(rule, node, key, tokens[0]);
    condition.op = ops.at(tokens[1]);
    condition.right = operand(rule, node, key, tokens[2]);
    return condition;
  }
  r_.expect_keys(node, key, {"all", "any", "not"});
  if (node.size() != 1) r_.fail(node, key, "expected exactly one of all, any, not");
  const std::string kind = node.begin()->first.Scalar();
  const YAML::Node value = node.begin()->second;
  if (kind == "not") {
    condition.kind = Condition::Kind::Not;
    condition.children.push_back(compile_condition(rule, value, key + ".not"));
    return condition;
  }
  condition.kind = kind == "all" ? Condition::Kind::All : Condition::Kind::Any;
  if (!value.IsSequence() || value.size() == 0) r_.fail(value, key + "." + kind, "expected a non-empty list of conditions");
  for (const auto& item : value) condition.children.push_back(compile_condition(rule, item, key + "." + kind));
  return condition;
}

Template RuleCompiler::compile_template(const CompiledRule& rule, const YAML::Node& node, const std::string& key) {
  std::string text = r_.text(node, key);
  Template parts;
  std::string literal;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{') {
      literal += text[i];
      continue;
    }
    size_t close = text.find('}', i);
    if (close == std::string::npos) r_.fail(node, key, "unclosed '{' in template");
    std::string name = text.substr(i + 1, close - i - 1);
    i = close;
    TemplatePart part;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ":bytes") == 0) {
      part.as_bytes = true;
      name.resize(name.size() - 6);
    }
    static const std::map<std::string, TemplatePart::Kind, std::less<>> site = {
        {"site.op", TemplatePart::Kind::SiteOp},         {"site.kernel", TemplatePart::Kind::SiteKernel},
        {"site.name", TemplatePart::Kind::SiteName},     {"site.source", TemplatePart::Kind::SiteSource},
        {"site.op_chain", TemplatePart::Kind::SiteChain}, {"idle_causes", TemplatePart::Kind::Idle},
        {"idle_culprits", TemplatePart::Kind::IdleCulprits}};
    if (auto found = site.find(name); found != site.end()) {
      part.kind = found->second;
    } else if (auto metric = metric_index_.find(name); metric != metric_index_.end()) {
      part.kind = TemplatePart::Kind::Metric;
      part.metric = metric->second;
    } else {
      r_.fail(node, key, "unknown placeholder {" + name + "}; expected a metric, threshold or built-in name, "
                         "site.op, site.kernel, site.name, site.source, site.op_chain, idle_causes or idle_culprits");
    }
    if (!literal.empty()) parts.push_back(TemplatePart{literal});
    literal.clear();
    parts.push_back(std::move(part));
  }
  if (!literal.empty()) parts.push_back(TemplatePart{literal});
  (void)rule;
  return parts;
}

}  // namespace ptadvise::rule_loading
