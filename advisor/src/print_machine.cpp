// Machine-read reports: JSON, SARIF 2.1.0, GitHub workflow commands, JUnit XML; and the escapes they use.
#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>

#include "format.h"
#include "print_job.h"
#include "ptadvise/advisor.h"
#include "ptadvise/summary_printer.h"

namespace ptadvise {

namespace {

using format::fixed;
using format::jstr;

constexpr const char* kInformationUri = "https://github.com/ptadvise/ptadvise";

void write_string_array(std::ostream& out, const std::vector<std::string>& items) {
  out << "[";
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << jstr(items[i]);
  out << "]";
}

void write_finding_json(const Report& report, const TraceReport& trace, size_t index, std::ostream& out,
                        const std::string& indent) {
  const Finding& f = trace.findings[index];
  bool is_new = trace.new_finding.empty() || trace.new_finding[index];
  const std::string in = indent + "  ";
  out << indent << "{\n";
  out << in << "\"rank\": " << f.rank << ",\n";
  out << in << "\"rule_id\": " << jstr(f.rule_id) << ",\n";
  if (!f.ranks.empty()) {
    out << in << "\"ranks\": [";
    for (size_t r = 0; r < f.ranks.size(); ++r) out << (r ? ", " : "") << f.ranks[r];
    out << "],\n";
  }
  out << in << "\"rule_name\": " << jstr(f.rule_name) << ",\n";
  out << in << "\"severity\": " << jstr(to_string(f.severity)) << ",\n";
  out << in << "\"tags\": ";
  write_string_array(out, f.tags);
  out << ",\n";
  out << in << "\"message\": " << jstr(f.message) << ",\n";
  out << in << "\"fix\": " << jstr(f.fix) << ",\n";
  out << in << "\"fingerprint\": " << jstr(f.fingerprint) << ",\n";
  out << in << "\"new\": " << (is_new ? "true" : "false") << ",\n";
  out << in << "\"failing\": " << (is_failing(report, trace, index) ? "true" : "false") << ",\n";
  out << in << "\"site\": {\"description\": " << jstr(describe_site(f.site)) << ", \"op\": " << jstr(f.site.op)
      << ", \"kernel\": " << jstr(f.site.kernel) << ", \"op_chain\": ";
  write_string_array(out, f.site.op_chain);
  out << ", \"detail\": " << jstr(f.site.detail) << "},\n";
  out << in << "\"source\": ";
  if (f.site.source) {
    out << "{\"file\": " << jstr(f.site.source->file) << ", \"line\": " << f.site.source->line
        << ", \"function\": " << jstr(f.site.source->function) << "}";
  } else {
    out << "null";
  }
  out << ",\n";
  out << in << "\"count_per_step\": " << fixed(f.count_per_step, 3) << ",\n";
  out << in << "\"time_ms_per_step\": " << fixed(f.time_ms_per_step, 3) << ",\n";
  out << in << "\"steps_present_pct\": " << fixed(f.steps_present_pct, 1) << ",\n";
  out << in << "\"saving_ms_per_step\": " << fixed(f.saving_ms_per_step, 3) << ",\n";
  out << in << "\"saving_pct\": " << fixed(f.saving_pct, 2) << ",\n";
  out << in << "\"saving_method\": " << jstr(f.saving_method) << ",\n";
  out << in << "\"confidence\": " << jstr(to_string(f.confidence)) << ",\n";
  out << in << "\"evidence\": [";
  for (size_t i = 0; i < f.evidence.size(); ++i) {
    const Evidence& e = f.evidence[i];
    out << (i ? ",\n" : "\n") << in << "  {\"step\": ";
    if (e.step_number >= 0) {
      out << e.step_number;
    } else {
      out << "null";
    }
    out << ", \"ts_us\": " << e.abs_ts_us << ", \"dur_ms\": " << fixed(static_cast<double>(e.dur_ns) / 1e6, 3)
        << ", \"event\": " << jstr(e.event) << ", \"track\": " << jstr(e.track) << "}";
  }
  out << (f.evidence.empty() ? "],\n" : "\n" + in + "],\n");
  out << in << "\"docs\": ";
  if (const RuleInfo* rule = format::rule_info(report, f.rule_id)) {
    out << "{\"summary\": " << jstr(rule->summary) << ", \"what\": " << jstr(rule->docs.what)
        << ", \"why\": " << jstr(rule->docs.why) << ", \"fix\": " << jstr(rule->docs.fix) << "}";
  } else {
    out << "null";
  }
  out << "\n" << indent << "}";
}

std::string sarif_level(Severity severity) {
  switch (severity) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Info: return "note";
  }
  return "warning";
}

// URI references: keep unreserved characters and '/', percent-encode the rest (RFC 3986).
std::string uri_path(std::string_view path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    bool keep = std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (keep) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// Where a finding points in the repository: its source line when the file is found below the source root,
// else the trace file at line 1.
std::pair<std::string, int> repo_location(const Report& report, const TraceReport& trace, const Finding& f) {
  if (f.site.source && f.site.source->line > 0) {
    std::string located = locate_source(f.site.source->file, report.source_root);
    if (!located.empty()) return {relative_path(located, report.source_root), f.site.source->line};
    if (std::filesystem::path(f.site.source->file).is_relative()) return {f.site.source->file, f.site.source->line};
  }
  return {relative_path(trace.path, report.source_root), 1};
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

std::string finding_message(const Finding& f) {
  std::string text = f.message;
  text += " (saves ~" + fixed(f.saving_ms_per_step, 3) + " ms per step, " + fixed(f.saving_pct, 1) +
          "% of step time; confidence " + std::string(to_string(f.confidence)) + ")";
  if (!f.fix.empty()) text += ". Fix: " + f.fix;
  return text;
}

}  // namespace

std::string json_escape(std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters even as references.
        if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string github_escape_data(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      default: out += c;
    }
  }
  return out;
}

std::string github_escape_property(std::string_view text) {
  std::string out;
  for (char c : github_escape_data(text)) {
    switch (c) {
      case ':': out += "%3A"; break;
      case ',': out += "%2C"; break;
      default: out += c;
    }
  }
  return out;
}

std::string relative_path(const std::string& path, const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path absolute = fs::weakly_canonical(fs::absolute(path, ec), ec);
  fs::path base = fs::weakly_canonical(fs::absolute(root.empty() ? "." : root, ec), ec);
  std::string result = path;
  if (!ec) {
    auto [base_end, path_it] = std::mismatch(base.begin(), base.end(), absolute.begin(), absolute.end());
    if (base_end == base.end()) {
      fs::path rel;
      for (; path_it != absolute.end(); ++path_it) rel /= *path_it;
      if (!rel.empty()) result = rel.generic_string();
    }
  }
  std::replace(result.begin(), result.end(), '\\', '/');
  return result;
}

std::optional<OutputFormat> parse_output_format(std::string_view text) {
  if (text == "text") return OutputFormat::Text;
  if (text == "json") return OutputFormat::Json;
  if (text == "sarif") return OutputFormat::Sarif;
  if (text == "github") return OutputFormat::Github;
  if (text == "junit") return OutputFormat::Junit;
  if (text == "markdown" || text == "md") return OutputFormat::Markdown;
  return std::nullopt;
}

std::string_view to_string(OutputFormat format) {
  switch (format) {
    case OutputFormat::Text: return "text";
    case OutputFormat::Json: return "json";
    case OutputFormat::Sarif: return "sarif";
    case OutputFormat::Github: return "github";
    case OutputFormat::Junit: return "junit";
    case OutputFormat::Markdown: return "markdown";
  }
  return "text";
}

void print_report(const Report& report, OutputFormat format, std::ostream& out, const PrintOptions& options) {
  switch (format) {
    case OutputFormat::Text: print_text(report, out, options.color); break;
    case OutputFormat::Json: print_json(report, out); break;
    case OutputFormat::Sarif: print_sarif(report, out); break;
    case OutputFormat::Github: print_github(report, out, options.github_limit_per_level); break;
    case OutputFormat::Junit: print_junit(report, out); break;
    case OutputFormat::Markdown: print_markdown(report, out); break;
  }
}

void print_json(const Report& report, std::ostream& out) {
  out << "{\n";
  out << "  \"tool\": {\"name\": \"ptadvise\", \"version\": " << jstr(report.tool_version) << "},\n";
  out << "  \"fail_on\": " << jstr(to_string(report.fail_on)) << ",\n";
  out << "  \"findings_total\": " << report.finding_count() << ",\n";
  out << "  \"findings_failing\": " << report.failing_count() << ",\n";
  out << "  \"suppressed\": " << report.suppressed << ",\n";
  out << "  \"baseline\": ";
  if (report.has_baseline) {
    out << "{\"stale\": [";
    for (size_t i = 0; i < report.stale.size(); ++i) {
      const auto& e = report.stale[i];
      out << (i ? ", " : "") << "{\"fingerprint\": " << jstr(e.fingerprint) << ", \"rule_id\": " << jstr(e.rule_id)
          << ", \"site\": " << jstr(e.site) << "}";
    }
    out << "]},\n";
  } else {
    out << "null,\n";
  }
  out << "  \"traces\": [";
  for (size_t t = 0; t < report.traces.size(); ++t) {
    const TraceReport& trace = report.traces[t];
    out << (t ? ",\n" : "\n") << "    {\n";
    out << "      \"path\": " << jstr(trace.path) << ",\n";
    out << "      \"rank\": " << (trace.rank ? std::to_string(*trace.rank) : std::string("null")) << ",\n";
    out << "      \"device\": " << jstr(trace.device) << ",\n";
    out << "      \"steps\": " << trace.step_count << ",\n";
    out << "      \"step_note\": " << jstr(trace.step_note) << ",\n";
    out << "      \"step_ms\": " << fixed(trace.step_ms, 3) << ",\n";
    out << "      \"gpu_busy_pct\": " << fixed(trace.gpu_busy_pct, 2) << ",\n";
    out << "      \"recoverable_ms_per_step\": " << fixed(trace.recoverable_ms, 3) << ",\n";
    out << "      \"recoverable_pct\": "
        << fixed(trace.step_ms > 0 ? 100.0 * trace.recoverable_ms / trace.step_ms : 0.0, 2) << ",\n";
    out << "      \"warnings\": ";
    write_string_array(out, trace.warnings);
    out << ",\n";
    out << "      \"coverage\": {\"rules_run\": " << trace.coverage.ran << ", \"rules_not_run\": [";
    for (size_t k = 0; k < trace.coverage.not_run.size(); ++k) {
      out << (k ? ", " : "") << "{\"id\": " << jstr(trace.coverage.not_run[k].first)
          << ", \"reason\": " << jstr(trace.coverage.not_run[k].second) << "}";
    }
    out << "], \"text\": " << jstr(format::coverage_line(trace)) << "},\n";
    if (trace.summary) out << "      \"summary\": " << summary_json(*trace.summary, 0) << ",\n";
    if (trace.job) {
      out << "      \"job\": ";
      job_print::json(*trace.job, out, "      ");
      out << ",\n";
    }
    out << "      \"findings\": [";
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      out << (i ? ",\n" : "\n");
      write_finding_json(report, trace, i, out, "        ");
    }
    out << (trace.findings.empty() ? "]\n" : "\n      ]\n");
    out << "    }";
  }
  out << (report.traces.empty() ? "]\n" : "\n  ]\n");
  out << "}\n";
}

void print_sarif(const Report& report, std::ostream& out) {
  const std::vector<RuleInfo> rules = format::all_rules(report);
  std::map<std::string, size_t> rule_index;
  for (size_t i = 0; i < rules.size(); ++i) rule_index[rules[i].id] = i;
  out << "{\n"
         "  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n"
         "  \"version\": \"2.1.0\",\n"
         "  \"runs\": [\n"
         "    {\n"
         "      \"tool\": {\n"
         "        \"driver\": {\n"
         "          \"name\": \"ptadvise\",\n"
      << "          \"version\": " << jstr(report.tool_version) << ",\n"
      << "          \"informationUri\": " << jstr(kInformationUri) << ",\n"
      << "          \"rules\": [";
  for (size_t i = 0; i < rules.size(); ++i) {
    const RuleInfo& rule = rules[i];
    std::string full = rule.docs.what.empty() ? rule.summary : rule.docs.what;
    out << (i ? ",\n" : "\n") << "            {\n"
        << "              \"id\": " << jstr(rule.id) << ",\n"
        << "              \"name\": " << jstr(rule.name) << ",\n"
        << "              \"shortDescription\": {\"text\": " << jstr(rule.summary.empty() ? rule.name : rule.summary)
        << "},\n"
        << "              \"fullDescription\": {\"text\": " << jstr(full.empty() ? rule.name : full) << "},\n"
        << "              \"help\": {\"text\": " << jstr(rule_help_text(rule))
        << ", \"markdown\": " << jstr(rule_help_markdown(rule)) << "},\n"
        << "              \"defaultConfiguration\": {\"level\": " << jstr(sarif_level(rule.severity)) << "},\n"
        << "              \"properties\": {\"tags\": ";
    write_string_array(out, rule.tags);
    out << "}\n            }";
  }
  out << (rules.empty() ? "]\n" : "\n          ]\n");
  out << "        }\n      },\n";
  out << "      \"results\": [";
  bool first = true;
  for (const auto& trace : report.traces) {
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      const Finding& f = trace.findings[i];
      auto [uri, line] = repo_location(report, trace, f);
      out << (first ? "\n" : ",\n") << "        {\n";
      first = false;
      out << "          \"ruleId\": " << jstr(f.rule_id) << ",\n";
      if (auto it = rule_index.find(f.rule_id); it != rule_index.end()) {
        out << "          \"ruleIndex\": " << it->second << ",\n";
      }
      out << "          \"level\": " << jstr(sarif_level(f.severity)) << ",\n";
      out << "          \"message\": {\"text\": " << jstr(finding_message(f)) << "},\n";
      out << "          \"locations\": [{\"physicalLocation\": {\"artifactLocation\": {\"uri\": " << jstr(uri_path(uri))
          << "}, \"region\": {\"startLine\": " << line << "}}";
      out << ", \"message\": {\"text\": " << jstr(describe_site(f.site)) << "}}],\n";
      out << "          \"partialFingerprints\": {\"ptadvise/v1\": " << jstr(f.fingerprint) << "},\n";
      if (!trace.new_finding.empty() && !trace.new_finding[i]) {
        out << "          \"baselineState\": \"unchanged\",\n";
      } else if (report.has_baseline) {
        out << "          \"baselineState\": \"new\",\n";
      }
      out << "          \"properties\": {\"rank\": " << f.rank << ", \"saving_ms_per_step\": "
          << fixed(f.saving_ms_per_step, 3) << ", \"saving_pct\": " << fixed(f.saving_pct, 2)
          << ", \"confidence\": " << jstr(to_string(f.confidence)) << ", \"trace\": " << jstr(trace.path);
      if (trace.rank) out << ", \"trace_rank\": " << *trace.rank;
      out << "}\n        }";
    }
  }
  out << (first ? "]" : "\n      ]") << ",\n";
  // What each trace could be checked for: a clean result is never silently empty.
  out << "      \"invocations\": [{\"executionSuccessful\": true, \"toolExecutionNotifications\": [";
  for (size_t t = 0; t < report.traces.size(); ++t) {
    out << (t ? ", " : "") << "{\"level\": \"note\", \"message\": {\"text\": "
        << jstr(format::trace_label(report.traces[t]) + ": " + format::coverage_line(report.traces[t])) << "}}";
  }
  out << "]}]\n";
  out << "    }\n  ]\n}\n";
}

void print_github(const Report& report, std::ostream& out, size_t limit_per_level) {
  struct Item {
    const TraceReport* trace;
    const Finding* finding;
  };
  std::vector<Item> items;
  for (const auto& trace : report.traces) {
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      if (!trace.new_finding.empty() && !trace.new_finding[i]) continue;  // accepted in the baseline
      items.push_back({&trace, &trace.findings[i]});
    }
  }
  // Top-ranked across traces: the annotation limit applies per step, not per trace.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.finding->saving_ms_per_step > b.finding->saving_ms_per_step;
  });
  std::map<Severity, size_t> emitted;
  size_t dropped = 0;
  for (const auto& item : items) {
    const Finding& f = *item.finding;
    if (emitted[f.severity] >= limit_per_level) {
      ++dropped;
      continue;
    }
    ++emitted[f.severity];
    const char* command = f.severity == Severity::Error ? "error" : f.severity == Severity::Warning ? "warning" : "notice";
    auto [file, line] = repo_location(report, *item.trace, f);
    std::string title = f.rule_id + " " + f.rule_name + " (#" + std::to_string(f.rank) + ", ~" +
                        fixed(f.saving_ms_per_step, 3) + " ms per step)";
    out << "::" << command << " file=" << github_escape_property(file) << ",line=" << line
        << ",title=" << github_escape_property(title) << "::" << github_escape_data(finding_message(f)) << "\n";
  }
  if (dropped > 0) {
    out << "::notice title=" << github_escape_property("ptadvise") << "::"
        << github_escape_data(std::to_string(dropped) +
                              " more findings are not annotated (GitHub shows 10 per level); see the job summary")
        << "\n";
  }
  for (const auto& trace : report.traces) {
    out << "::notice title=" << github_escape_property("ptadvise coverage") << "::"
        << github_escape_data(format::trace_label(trace) + ": " + format::coverage_line(trace)) << "\n";
  }
}

void print_junit(const Report& report, std::ostream& out) {
  size_t tests = 0, failures = 0;
  struct Case {
    const RuleInfo* rule;
    std::vector<size_t> findings;
    bool failed = false;
  };
  const std::vector<RuleInfo> rules = format::all_rules(report);
  std::vector<std::vector<Case>> suites;
  for (const auto& trace : report.traces) {
    std::vector<Case> cases;
    for (const auto& rule : rules) cases.push_back({&rule, {}, false});
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      for (auto& c : cases) {
        if (c.rule->id == trace.findings[i].rule_id) {
          c.findings.push_back(i);
          c.failed = c.failed || is_failing(report, trace, i);
        }
      }
    }
    for (const auto& c : cases) failures += c.failed ? 1 : 0;
    tests += cases.size();
    suites.push_back(std::move(cases));
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"ptadvise\" tests=\"" << tests << "\" failures=\"" << failures << "\">\n";
  for (size_t t = 0; t < report.traces.size(); ++t) {
    const TraceReport& trace = report.traces[t];
    size_t suite_failures = 0, suite_skipped = 0;
    for (const auto& c : suites[t]) {
      suite_failures += c.failed ? 1 : 0;
      for (const auto& not_run : trace.coverage.not_run) suite_skipped += not_run.first == c.rule->id ? 1 : 0;
    }
    out << "  <testsuite name=\"" << xml_escape(format::trace_label(trace)) << "\" tests=\"" << suites[t].size()
        << "\" failures=\"" << suite_failures << "\" errors=\"0\" skipped=\"" << suite_skipped
        << "\">\n";
    for (const auto& c : suites[t]) {
      out << "    <testcase classname=\"ptadvise." << xml_escape(c.rule->id) << "\" name=\""
          << xml_escape(c.rule->id + " " + c.rule->name) << "\"";
      std::string not_run;
      for (const auto& [id, reason] : trace.coverage.not_run) {
        if (id == c.rule->id) not_run = reason;
      }
      if (!not_run.empty()) {
        out << "><skipped message=\"" << xml_escape("could not check this trace: " + not_run) << "\"/></testcase>\n";
        continue;
      }
      if (c.findings.empty()) {
        out << "/>\n";
        continue;
      }
      out << ">\n";
      std::string body;
      double saving = 0;
      for (size_t i : c.findings) {
        const Finding& f = trace.findings[i];
        saving += f.saving_ms_per_step;
        std::string where = format::source_text(f);
        body += "#" + std::to_string(f.rank) + " " + std::string(to_string(f.severity)) + ": " + f.message + "\n  at " +
                (where.empty() ? describe_site(f.site) : where) + "\n  saves ~" + fixed(f.saving_ms_per_step, 3) +
                " ms per step" + (!trace.new_finding.empty() && !trace.new_finding[i] ? " (in baseline)" : "") + "\n";
        if (!f.fix.empty()) body += "  fix: " + f.fix + "\n";
      }
      std::string summary = std::to_string(c.findings.size()) + (c.findings.size() == 1 ? " finding" : " findings") +
                            ", ~" + fixed(saving, 3) + " ms per step";
      if (c.failed) {
        out << "      <failure message=\"" << xml_escape(summary) << "\" type=\"" << xml_escape(c.rule->id) << "\">"
            << xml_escape(body) << "</failure>\n";
      } else {
        out << "      <system-out>" << xml_escape(summary + " (not failing)\n" + body) << "</system-out>\n";
      }
      out << "    </testcase>\n";
    }
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
}

}  // namespace ptadvise
