// Small formatting helpers shared by the printers (private to advisor/).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>
#include <string_view>

#include "ptadvise/advisor.h"

namespace ptadvise::format {

// Fixed decimals; NaN and infinities (which JSON cannot carry) print as 0.
inline std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) value = 0;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  if (std::string_view(text).find_first_not_of("-0.") == std::string_view::npos && text[0] == '-') {
    return text + 1;  // "-0.000" reads as a mistake
  }
  return text;
}

inline std::string jstr(std::string_view text) { return "\"" + json_escape(text) + "\""; }

inline std::string trace_label(const TraceReport& trace) {
  std::string label = trace.path;
  if (trace.rank) label += " (rank " + std::to_string(*trace.rank) + ")";
  return label;
}

// "20 rules checked this trace" or "15 of 20 rules checked this trace; 5 could not: no device properties
// (PTA105, PTA116), no Python stacks (PTA111)": a clean result is never silently empty.
inline std::string coverage_line(const TraceReport& trace) {
  const Coverage& c = trace.coverage;
  const size_t total = c.ran + c.not_run.size();
  std::string line = (c.not_run.empty() ? std::to_string(c.ran) : std::to_string(c.ran) + " of " + std::to_string(total)) +
                     (total == 1 ? " rule" : " rules") + " checked this trace";
  if (c.not_run.empty()) return line;
  line += "; " + std::to_string(c.not_run.size()) + " could not:";
  std::vector<std::string> reasons;
  for (const auto& [id, reason] : c.not_run) {
    bool known = false;
    for (const auto& r : reasons) known = known || r == reason;
    if (!known) reasons.push_back(reason);
  }
  for (size_t r = 0; r < reasons.size(); ++r) {
    line += (r ? ", " : " ") + reasons[r] + " (";
    bool first = true;
    for (const auto& [id, reason] : c.not_run) {
      if (reason != reasons[r]) continue;
      line += (first ? "" : ", ") + id;
      first = false;
    }
    line += ")";
  }
  return line;
}

inline const RuleInfo* rule_info(const Report& report, std::string_view id) {
  for (const auto& rule : report.rules) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

// The rules that ran, plus any rule a finding names that is not among them (hand-made reports).
inline std::vector<RuleInfo> all_rules(const Report& report) {
  std::vector<RuleInfo> rules = report.rules;
  for (const auto& trace : report.traces) {
    for (const auto& f : trace.findings) {
      bool known = false;
      for (const auto& r : rules) known = known || r.id == f.rule_id;
      if (!known) {
        RuleInfo info;
        info.id = f.rule_id;
        info.name = f.rule_name;
        info.summary = f.rule_name;
        info.severity = f.severity;
        info.tags = f.tags;
        info.fix = f.fix;
        rules.push_back(std::move(info));
      }
    }
  }
  return rules;
}

// "train.py:42 in step" when the finding has a source line, else empty.
inline std::string source_text(const Finding& finding) {
  if (!finding.site.source) return {};
  std::string text = finding.site.source->file;
  if (finding.site.source->line > 0) text += ":" + std::to_string(finding.site.source->line);
  if (!finding.site.source->function.empty()) text += " in " + finding.site.source->function;
  return text;
}

inline std::string evidence_text(const Evidence& evidence) {
  std::string text;
  if (evidence.step_number >= 0) text += "step " + std::to_string(evidence.step_number) + ", ";
  text += "ts " + std::to_string(evidence.abs_ts_us) + " us";
  if (!evidence.track.empty()) text += " on " + evidence.track;
  text += ": " + evidence.event + " (" + fixed(static_cast<double>(evidence.dur_ns) / 1e6, 3) + " ms)";
  return text;
}

}  // namespace ptadvise::format
