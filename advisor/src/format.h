// Small formatting helpers shared by the printers (private to advisor/).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "ptadvise/advisor.h"
#include "ptadvise/visible_text.h"

namespace ptadvise::format {

// Fixed decimals; NaN and infinities (which JSON cannot carry) print as 0.
inline std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) value = 0;
  std::string text = fmt::format("{:.{}f}", value, decimals);
  if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);  // "-0.000" reads as a mistake
  return text;
}

// A time as a share of the step: "12.5%", or "n/a" when the step time is unknown.
inline std::string pct_of_step(double ms, double step_ms) {
  if (step_ms <= 0) return "n/a";
  return fixed(100.0 * ms / step_ms, 1) + "%";
}

// Three significant digits for a figure people read ("53.2", "1.87", "0.000123"; whole numbers as they
// are): the precision the rules' messages use, never scientific notation.
inline std::string short_number(double value) {
  if (!std::isfinite(value)) value = 0;
  const double magnitude = std::fabs(value);
  if (magnitude >= 100 || value == std::floor(value)) return fixed(value, 0);
  if (magnitude >= 10) return fixed(value, 1);
  if (magnitude >= 0.1) return fixed(value, 2);
  std::string text = fixed(value, std::min(12, 2 - static_cast<int>(std::floor(std::log10(magnitude)))));
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

// Text from a trace (event names, paths) made safe to show on a terminal or in a CI log (visible_text).
inline std::string visible(std::string_view text, bool keep_newlines = false) {
  return visible_text(text, keep_newlines);
}

// A Markdown table cell: no pipes or line breaks, no control characters.
inline std::string md_cell(std::string_view text) {
  std::string out;
  for (char c : visible(text, /*keep_newlines=*/true)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string md_code(std::string_view text) {
  if (text.find('`') != std::string_view::npos) return "``" + md_cell(text) + "``";
  return "`" + md_cell(text) + "`";
}

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
      if (!known) rules.push_back(rule_of(f));
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

// A trace timestamp in µs as the file writes it: "1700000000123" or "88511388.202" (ns kept, trailing
// zeros dropped), so that it can be searched for in a viewer and lines up with the file's events.
inline std::string ts_us_text(int64_t ns) {
  // Before the file's zero the sign goes on the whole value; the magnitude is unsigned (INT64_MIN).
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  const std::string sign = ns < 0 ? "-" : "";
  if (magnitude % 1000 == 0) return sign + std::to_string(magnitude / 1000);
  std::string text = sign + fmt::format("{}.{:03}", magnitude / 1000, magnitude % 1000);
  while (text.back() == '0') text.pop_back();
  return text;
}

inline std::string evidence_text(const Evidence& evidence) {
  std::string text;
  if (evidence.step_number >= 0) text += "step " + std::to_string(evidence.step_number) + ", ";
  text += "ts " + ts_us_text(evidence.file_ts_ns) + " us";
  if (!evidence.track.empty()) text += " on " + evidence.track;
  text += ": " + evidence.event + " (" + fixed(static_cast<double>(evidence.dur_ns) / 1e6, 3) + " ms)";
  return text;
}

}  // namespace ptadvise::format
