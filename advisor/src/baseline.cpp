#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
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

void sort_entries(std::vector<BaselineEntry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const BaselineEntry& a, const BaselineEntry& b) {
    return std::tie(a.rule_id, a.site, a.fingerprint) < std::tie(b.rule_id, b.site, b.fingerprint);
  });
}

}  // namespace

std::variant<Baseline, ConfigError> parse_baseline(const std::string& yaml_text, const std::string& label) {
  Baseline baseline;
  baseline.path = label;
  // yaml-cpp is not exception-safe (a failed allocation inside it corrupts the heap: jbeder/yaml-cpp#459).
  BadAllocShield shield;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!yaml_within_budget(root)) return ConfigError{label + ": " + yaml_budget_message()};
    if (!root.IsMap()) return ConfigError{yaml_where(label, root.Mark()) + ": expected a baseline with a findings list"};
    YAML::Node version = root["version"];
    if (version && (!version.IsScalar() || version.Scalar() != "1")) {
      return ConfigError{yaml_where(label, version.Mark()) + ": version: expected 1"};
    }
    YAML::Node findings = root["findings"];
    if (!findings || !(findings.IsSequence() || findings.IsNull())) {
      return ConfigError{yaml_where(label, root.Mark()) + ": findings: expected a list of accepted findings"};
    }
    for (const auto& item : findings) {
      if (!item.IsMap()) return ConfigError{yaml_where(label, item.Mark()) + ": expected a finding entry (a map)"};
      BaselineEntry entry;
      auto text = [&](const char* key, bool required, std::string& into) -> std::optional<ConfigError> {
        YAML::Node value = item[key];
        if (!value) {
          if (required) return ConfigError{yaml_where(label, item.Mark()) + ": entry without '" + key + "'"};
          return std::nullopt;
        }
        if (!value.IsScalar()) return ConfigError{yaml_where(label, value.Mark()) + ": " + key + ": expected a string"};
        into = value.Scalar();
        return std::nullopt;
      };
      if (auto e = text("fingerprint", true, entry.fingerprint)) return *e;
      if (auto e = text("rule", true, entry.rule_id)) return *e;
      if (auto e = text("name", false, entry.rule_name)) return *e;
      if (auto e = text("site", false, entry.site)) return *e;
      if (YAML::Node cost = item["saving_ms_per_step"]) {
        try {
          entry.saving_ms_per_step = cost.as<double>();
        } catch (const YAML::Exception&) {
          return ConfigError{yaml_where(label, cost.Mark()) + ": saving_ms_per_step: expected a number"};
        }
      }
      baseline.entries.push_back(std::move(entry));
    }
  } catch (const YAML::Exception& e) {
    return ConfigError{yaml_where(label, e.mark) + ": invalid YAML: " + e.msg};
  }
  sort_entries(baseline.entries);
  return baseline;
}

std::variant<Baseline, ConfigError> load_baseline(const std::string& path) {
  std::string text;
  if (auto error = read_small_file(path, text)) return ConfigError{path + ": cannot read the baseline file: " + *error};
  return parse_baseline(text, path);
}

Baseline make_baseline(const std::vector<Finding>& findings) {
  // One entry per fingerprint; the same finding on several ranks keeps its largest cost.
  std::map<std::string, BaselineEntry> by_fingerprint;
  for (const auto& finding : findings) {
    std::string print = finding.fingerprint.empty() ? fingerprint(finding) : finding.fingerprint;
    auto [it, inserted] = by_fingerprint.try_emplace(print);
    BaselineEntry& entry = it->second;
    if (inserted) {
      entry.fingerprint = print;
      entry.rule_id = finding.rule_id;
      entry.rule_name = finding.rule_name;
      entry.site = describe_site(finding.site);
    }
    entry.saving_ms_per_step = std::max(entry.saving_ms_per_step, finding.saving_ms_per_step);
  }
  Baseline baseline;
  for (auto& [print, entry] : by_fingerprint) baseline.entries.push_back(std::move(entry));
  sort_entries(baseline.entries);
  return baseline;
}

void write_baseline(const Baseline& baseline, std::ostream& out) {
  BadAllocShield shield;  // yaml-cpp is not exception-safe
  YAML::Emitter yaml;
  yaml << YAML::Comment("ptadvise baseline: accepted findings. `ptadvise check --baseline FILE` fails only on findings")
       << YAML::Newline
       << YAML::Comment("not listed here. Regenerate with `ptadvise check --write-baseline FILE`.");
  yaml << YAML::BeginMap << YAML::Key << "version" << YAML::Value << 1 << YAML::Key << "findings" << YAML::Value;
  if (baseline.entries.empty()) yaml << YAML::Flow;
  yaml << YAML::BeginSeq;
  for (const auto& entry : baseline.entries) {
    yaml << YAML::BeginMap;
    yaml << YAML::Key << "fingerprint" << YAML::Value << YAML::DoubleQuoted << entry.fingerprint;
    yaml << YAML::Key << "rule" << YAML::Value << YAML::DoubleQuoted << entry.rule_id;
    yaml << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << entry.rule_name;
    yaml << YAML::Key << "site" << YAML::Value << YAML::DoubleQuoted << entry.site;
    // A plain scalar with three decimals, so that re-written baselines do not churn on float noise.
    yaml << YAML::Key << "saving_ms_per_step" << YAML::Value << fmt::format("{:.3f}", entry.saving_ms_per_step);
    yaml << YAML::EndMap;
  }
  yaml << YAML::EndSeq << YAML::EndMap;
  out << yaml.c_str() << "\n";
}

BaselineMatch match_baseline(const Baseline& baseline, const std::vector<Finding>& findings) {
  std::set<std::string> accepted;
  for (const auto& entry : baseline.entries) accepted.insert(entry.fingerprint);
  std::set<std::string> present;
  BaselineMatch match;
  match.in_baseline.reserve(findings.size());
  for (const auto& finding : findings) {
    present.insert(finding.fingerprint);
    match.in_baseline.push_back(accepted.count(finding.fingerprint) > 0);
  }
  for (const auto& entry : baseline.entries) {
    if (!present.count(entry.fingerprint)) match.stale.push_back(entry);
  }
  return match;
}

}  // namespace ptadvise
