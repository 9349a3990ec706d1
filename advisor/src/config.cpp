#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>

#include "ptadvise/advisor.h"
#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/io.h"
#include "ptadvise/yaml_budget.h"
#include "ptadvise/yaml_reader.h"

namespace ptadvise {

namespace {

namespace fs = std::filesystem;

struct ConfigFailure {
  std::string message;
};

[[noreturn]] void fail(const std::string& label, const YAML::Node& node, const std::string& what) {
  throw ConfigFailure{yaml_where(label, node.Mark()) + ": " + what};
}

std::string resolve_against(const std::string& path, const std::string& base_directory) {
  if (path.empty() || fs::path(path).is_absolute() || base_directory.empty()) return path;
  return (fs::path(base_directory) / path).lexically_normal().string();
}

std::string scalar(const std::string& label, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(label, node, key + ": expected a string");
  return node.Scalar();
}

std::vector<std::string> string_list(const std::string& label, const YAML::Node& node, const std::string& key,
                                     std::map<std::string, std::string>* positions = nullptr) {
  std::vector<std::string> items;
  if (node.IsNull()) return items;
  auto add = [&](const YAML::Node& item) {
    items.push_back(item.Scalar());
    if (positions) (*positions)[key + "\x1f" + item.Scalar()] = yaml_where(label, item.Mark());
  };
  if (node.IsScalar()) {
    add(node);
    return items;
  }
  if (!node.IsSequence()) fail(label, node, key + ": expected a rule id, name or tag, or a list of them");
  for (const auto& item : node) {
    if (!item.IsScalar()) fail(label, item, key + ": expected a rule id, name or tag");
    add(item);
  }
  return items;
}

Severity severity_of(const std::string& label, const YAML::Node& node, const std::string& key) {
  auto severity = parse_severity(scalar(label, node, key));
  if (!severity) fail(label, node, key + ": expected info, warning or error, got '" + node.Scalar() + "'");
  return *severity;
}

double number_of(const std::string& label, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(label, node, key + ": expected a number");
  const std::string& text = node.Scalar();
  try {
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;  // nan would disable the rule silently
  } catch (const std::exception&) {
  }
  fail(label, node, key + ": expected a number, got '" + text + "'");
}

RuleOverride parse_override(const std::string& label, const std::string& rule, const YAML::Node& key_node,
                            const YAML::Node& body) {
  RuleOverride entry;
  entry.rule = rule;
  entry.line = key_node.Mark().line + 1;
  entry.column = key_node.Mark().column + 1;
  if (!body.IsMap()) fail(label, body, "rules." + rule + ": expected a map with severity and/or thresholds");
  for (const auto& field : body) {
    std::string key = scalar(label, field.first, "rules." + rule);
    std::string path = "rules." + rule + "." + key;
    if (key == "severity") {
      entry.severity = severity_of(label, field.second, path);
    } else if (key == "thresholds") {
      if (!field.second.IsMap()) fail(label, field.second, path + ": expected a map of threshold name to number");
      for (const auto& threshold : field.second) {
        std::string name = scalar(label, threshold.first, path);
        entry.thresholds[name] = number_of(label, threshold.second, path + "." + name);
      }
    } else {
      fail(label, field.first, path + ": unknown key (expected severity or thresholds)");
    }
  }
  return entry;
}

Config parse_document(const YAML::Node& root, const std::string& label, const std::string& base_directory) {
  Config config;
  config.path = label;
  if (root.IsNull()) return config;
  if (!root.IsMap()) fail(label, root, "expected a map of settings at the top level");
  for (const auto& field : root) {
    std::string key = scalar(label, field.first, "key");
    const YAML::Node& value = field.second;
    if (key == "select") {
      config.select = string_list(label, value, key, &config.positions);
    } else if (key == "extend-select") {
      config.extend_select = string_list(label, value, key, &config.positions);
    } else if (key == "ignore") {
      config.ignore = string_list(label, value, key, &config.positions);
    } else if (key == "fail-on") {
      config.fail_on = severity_of(label, value, key);
    } else if (key == "rule-directories") {
      for (const auto& dir : string_list(label, value, key)) {
        config.rule_directories.push_back(resolve_against(dir, base_directory));
      }
    } else if (key == "kernel-families") {
      for (const auto& table : string_list(label, value, key)) {
        config.kernel_families.push_back(resolve_against(table, base_directory));
      }
    } else if (key == "source-root") {
      config.source_root = resolve_against(scalar(label, value, key), base_directory);
    } else if (key == "baseline") {
      config.baseline = resolve_against(scalar(label, value, key), base_directory);
    } else if (key == "rules") {
      if (value.IsNull()) continue;
      if (!value.IsMap()) fail(label, value, "rules: expected a map of rule id or name to its settings");
      for (const auto& rule : value) {
        config.rules.push_back(parse_override(label, scalar(label, rule.first, "rules"), rule.first, rule.second));
      }
    } else {
      fail(label, field.first,
           key + ": unknown key (expected select, extend-select, ignore, rules, rule-directories, "
                 "kernel-families, fail-on, source-root or baseline)");
    }
  }
  return config;
}

bool selector_matches(const RuleInfo& rule, std::string_view selector) {
  if (rule.id == selector || rule.name == selector) return true;
  return std::find(rule.tags.begin(), rule.tags.end(), selector) != rule.tags.end();
}

void emit_list(YAML::Emitter& yaml, const char* key, const std::vector<std::string>& items) {
  yaml << YAML::Key << key << YAML::Value;
  if (items.empty()) yaml << YAML::Flow;
  yaml << items;
}

}  // namespace

std::variant<Config, ConfigError> parse_config(const std::string& yaml_text, const std::string& label,
                                               const std::string& base_directory) {
  // yaml-cpp is not exception-safe (a failed allocation inside it corrupts the heap: jbeder/yaml-cpp#459).
  BadAllocShield shield;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!yaml_within_budget(root)) return ConfigError{label + ": " + yaml_budget_message()};
    return parse_document(root, label, base_directory);
  } catch (const ConfigFailure& failure) {
    return ConfigError{failure.message};
  } catch (const YAML::Exception& e) {
    return ConfigError{yaml_where(label, e.mark) + ": invalid YAML: " + e.msg};
  }
}

std::variant<Config, ConfigError> load_config(const std::string& path) {
  std::string text;
  if (auto error = read_small_file(path, text)) {
    return ConfigError{path + ": cannot read the configuration file: " + *error};
  }
  std::string base = fs::path(path).parent_path().string();
  return parse_config(text, path, base);
}

std::string find_config(const std::string& start_directory) {
  std::error_code ec;
  fs::path dir = fs::absolute(start_directory, ec);
  if (ec) return {};
  while (true) {
    fs::path candidate = dir / ".ptadvise.yaml";
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (!dir.has_parent_path() || dir.parent_path() == dir) return {};
    dir = dir.parent_path();
  }
}

std::variant<EvaluateOptions, ConfigError> resolve_selection(const Config& config, const RuleSet& rules) {
  return resolve_selection(config, rules, {});
}

std::variant<EvaluateOptions, ConfigError> resolve_selection(const Config& config, const RuleSet& rules,
                                                             const std::vector<RuleInfo>& job_rules) {
  std::vector<RuleInfo> infos = rules.infos();
  infos.insert(infos.end(), job_rules.begin(), job_rules.end());
  auto check_selectors = [&](const std::vector<std::string>& selectors, const char* key) -> std::optional<ConfigError> {
    for (const auto& selector : selectors) {
      bool known = std::any_of(infos.begin(), infos.end(), [&](const RuleInfo& r) { return selector_matches(r, selector); });
      if (!known) {
        auto position = config.positions.find(std::string(key) + "\x1f" + selector);
        std::string origin = position != config.positions.end() ? position->second
                             : config.path.empty()              ? std::string("command line")
                                                                : config.path;
        std::string hint = rules.closest(selector);
        return ConfigError{origin + ": " + key + ": '" + selector + "' is not a rule id, name or tag" +
                           (hint.empty() ? "" : " (did you mean " + hint + "?)")};
      }
    }
    return std::nullopt;
  };
  if (auto e = check_selectors(config.select, "select")) return *e;
  if (auto e = check_selectors(config.extend_select, "extend-select")) return *e;
  if (auto e = check_selectors(config.ignore, "ignore")) return *e;

  EvaluateOptions options;
  for (const auto& rule : infos) {
    bool selected = config.select.empty();
    for (const auto& s : config.select) selected = selected || selector_matches(rule, s);
    for (const auto& s : config.extend_select) selected = selected || selector_matches(rule, s);
    bool ignored = false;
    for (const auto& s : config.ignore) ignored = ignored || selector_matches(rule, s);
    if (!selected || ignored) options.skip.push_back(rule.id);
  }
  // Selection is expressed as `skip` so that `only` stays empty and the rules engine runs the rest.
  for (const auto& entry : config.rules) {
    auto match = std::find_if(infos.begin(), infos.end(),
                              [&](const RuleInfo& r) { return r.id == entry.rule || r.name == entry.rule; });
    const RuleInfo* rule = match == infos.end() ? nullptr : &*match;
    if (!rule) {
      return ConfigError{config.path + ":" + std::to_string(entry.line) + ":" + std::to_string(entry.column) +
                         ": rules: '" + entry.rule + "' is not a rule id or name"};
    }
    if (entry.severity) options.severities[rule->id] = *entry.severity;
    for (const auto& [name, value] : entry.thresholds) {
      const std::string& wanted = name;  // clang 14 cannot capture a structured binding
      bool known = std::any_of(rule->thresholds.begin(), rule->thresholds.end(),
                               [&](const ThresholdInfo& t) { return t.name == wanted; });
      if (!known) {
        std::string names;
        for (const auto& t : rule->thresholds) names += (names.empty() ? "" : ", ") + t.name;
        return ConfigError{config.path + ":" + std::to_string(entry.line) + ":" + std::to_string(entry.column) +
                           ": rules." + entry.rule + ".thresholds: '" + name + "' is not a threshold of " + rule->id +
                           (names.empty() ? std::string(" (it has none)") : " (it has " + names + ")")};
      }
      options.thresholds[rule->id][name] = value;
    }
  }
  return options;
}

void print_config(const Config& config, std::ostream& out) {
  BadAllocShield shield;  // yaml-cpp is not exception-safe
  YAML::Emitter yaml;
  yaml << YAML::Comment("effective configuration" + (config.path.empty() ? std::string(" (defaults)") : " from " + config.path))
       << YAML::BeginMap;
  emit_list(yaml, "select", config.select);
  emit_list(yaml, "extend-select", config.extend_select);
  emit_list(yaml, "ignore", config.ignore);
  yaml << YAML::Key << "fail-on" << YAML::Value << std::string(to_string(config.fail_on.value_or(Severity::Warning)));
  emit_list(yaml, "rule-directories", config.rule_directories);
  emit_list(yaml, "kernel-families", config.kernel_families);
  yaml << YAML::Key << "source-root" << YAML::Value << config.source_root.value_or(".");
  if (config.baseline) yaml << YAML::Key << "baseline" << YAML::Value << *config.baseline;
  yaml << YAML::Key << "rules" << YAML::Value;
  if (config.rules.empty()) yaml << YAML::Flow;
  yaml << YAML::BeginMap;
  for (const auto& entry : config.rules) {
    yaml << YAML::Key << entry.rule << YAML::Value << YAML::BeginMap;
    if (entry.severity) yaml << YAML::Key << "severity" << YAML::Value << std::string(to_string(*entry.severity));
    if (!entry.thresholds.empty()) {
      yaml << YAML::Key << "thresholds" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, value] : entry.thresholds) yaml << YAML::Key << name << YAML::Value << value;
      yaml << YAML::EndMap;
    }
    yaml << YAML::EndMap;
  }
  yaml << YAML::EndMap << YAML::EndMap;
  out << yaml.c_str() << "\n";
}

}  // namespace ptadvise
