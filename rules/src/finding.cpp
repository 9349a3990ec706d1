#include "ptadvise/finding.h"

namespace ptadvise {

std::string elide_middle(const std::string& text, size_t columns) {
  std::vector<size_t> starts;  // byte offset of each code point
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= columns || columns < 3) return text;
  const size_t head = (columns - 1) / 2, tail = columns - 1 - head;
  return text.substr(0, starts[head]) + "\u2026" + text.substr(starts[starts.size() - tail]);
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "warning";
}

std::optional<Severity> parse_severity(std::string_view text) {
  if (text == "info") return Severity::Info;
  if (text == "warning") return Severity::Warning;
  if (text == "error") return Severity::Error;
  return std::nullopt;
}

std::string_view to_string(Confidence confidence) {
  switch (confidence) {
    case Confidence::Low: return "low";
    case Confidence::Medium: return "medium";
    case Confidence::High: return "high";
  }
  return "medium";
}

Finding finding_of(const RuleInfo& rule) {
  Finding finding;
  finding.rule_id = rule.id;
  finding.rule_name = rule.name;
  finding.severity = rule.severity;
  finding.tags = rule.tags;
  finding.fix = rule.fix;
  finding.short_fix = rule.short_fix;
  return finding;
}

RuleInfo rule_of(const Finding& finding) {
  RuleInfo rule;
  rule.id = finding.rule_id;
  rule.name = finding.rule_name;
  rule.summary = finding.rule_name;
  rule.severity = finding.severity;
  rule.tags = finding.tags;
  rule.fix = finding.fix;
  rule.short_fix = finding.short_fix;
  return rule;
}

}  // namespace ptadvise
