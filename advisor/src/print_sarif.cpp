// SARIF 2.1.0 for code-scanning services: one document built with nlohmann::json.
#include <map>
#include <ostream>

#include "ptadvise/bad_alloc_shield.h"
#include "format.h"
#include "json_doc.h"
#include "locations.h"

namespace ptadvise {

namespace {

using jsondoc::Json;
using jsondoc::number;

constexpr const char* kInformationUri = "https://github.com/ptadvise/ptadvise";

std::string sarif_level(Severity severity) {
  switch (severity) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Info: return "note";
  }
  return "warning";
}

std::string rule_help_text(const RuleInfo& rule) {
  std::string text = rule.summary;
  if (!rule.docs.why.empty()) text += "\n\nWhy it is slow: " + rule.docs.why;
  if (!rule.fix.empty()) text += "\n\nFix: " + rule.fix;
  return text;
}

std::string rule_help_markdown(const RuleInfo& rule) {
  std::string text = "**" + rule.id + " " + rule.name + "**: " + rule.summary + "\n";
  if (!rule.docs.what.empty()) text += "\n### What it does\n" + rule.docs.what + "\n";
  if (!rule.docs.why.empty()) text += "\n### Why it is slow\n" + rule.docs.why + "\n";
  if (!rule.docs.example.empty()) text += "\n### Example\n```python\n" + rule.docs.example + "\n```\n";
  if (!rule.docs.fix.empty()) text += "\n### Fix\n" + rule.docs.fix + "\n";
  return text;
}

Json rule_document(const RuleInfo& rule) {
  std::string full = rule.docs.what.empty() ? rule.summary : rule.docs.what;
  return {{"id", rule.id},
          {"name", rule.name},
          {"shortDescription", {{"text", rule.summary.empty() ? rule.name : rule.summary}}},
          {"fullDescription", {{"text", full.empty() ? rule.name : full}}},
          {"help", {{"text", rule_help_text(rule)}, {"markdown", rule_help_markdown(rule)}}},
          {"defaultConfiguration", {{"level", sarif_level(rule.severity)}}},
          {"properties", {{"tags", rule.tags}}}};
}

}  // namespace

void print_sarif(const Report& report, std::ostream& out) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  const std::vector<RuleInfo> rules = format::all_rules(report);
  std::map<std::string, size_t> rule_index;
  Json rule_documents = Json::array();
  for (size_t i = 0; i < rules.size(); ++i) {
    rule_index[rules[i].id] = i;
    rule_documents.push_back(rule_document(rules[i]));
  }
  Json results = Json::array();
  for (const auto& trace : report.traces) {
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      const Finding& f = trace.findings[i];
      auto [uri, line] = repo_location(report, trace, f);
      Json result;
      result["ruleId"] = f.rule_id;
      if (auto it = rule_index.find(f.rule_id); it != rule_index.end()) result["ruleIndex"] = it->second;
      result["level"] = sarif_level(f.severity);
      result["message"] = {{"text", finding_message(f)}};
      result["locations"] = Json::array({{{"physicalLocation",
                                           {{"artifactLocation", {{"uri", uri_reference(uri)}}},
                                            {"region", {{"startLine", line}}}}},
                                          {"message", {{"text", describe_site(f.site)}}}}});
      result["partialFingerprints"] = {{"ptadvise/v1", f.fingerprint}};
      if (!trace.new_finding.empty() && !trace.new_finding[i]) {
        result["baselineState"] = "unchanged";
      } else if (report.has_baseline) {
        result["baselineState"] = "new";
      }
      Json properties = {{"rank", f.rank},
                         {"saving_ms_per_step", number(f.saving_ms_per_step, 3)},
                         {"saving_pct", number(f.saving_pct, 2)},
                         {"confidence", to_string(f.confidence)},
                         {"trace", trace.path}};
      if (trace.rank) properties["trace_rank"] = *trace.rank;
      result["properties"] = std::move(properties);
      results.push_back(std::move(result));
    }
  }
  // What each trace could be checked for: a clean result is never silently empty.
  Json notifications = Json::array();
  for (const auto& trace : report.traces) {
    notifications.push_back(
        {{"level", "note"}, {"message", {{"text", format::trace_label(trace) + ": " + format::coverage_line(trace)}}}});
  }
  Json run;
  run["tool"] = {{"driver",
                  {{"name", "ptadvise"},
                   {"version", report.tool_version},
                   {"informationUri", kInformationUri},
                   {"rules", std::move(rule_documents)}}}};
  run["results"] = std::move(results);
  run["invocations"] =
      Json::array({{{"executionSuccessful", true}, {"toolExecutionNotifications", std::move(notifications)}}});
  Json document;
  document["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  document["version"] = "2.1.0";
  document["runs"] = Json::array({std::move(run)});
  jsondoc::write(out, document);
}

}  // namespace ptadvise
