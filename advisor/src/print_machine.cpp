// GitHub workflow commands and their escapes; where findings point in the repository (shared with SARIF);
// choosing a printer.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>

#include "format.h"
#include "ptadvise/advisor.h"
#include "locations.h"

namespace ptadvise {

using format::fixed;

std::pair<std::string, int> repo_location(const Report& report, const TraceReport& trace, const Finding& f) {
  if (f.site.source && f.site.source->line > 0) {
    std::string located = locate_source(f.site.source->file, report.source_root);
    if (!located.empty()) return {relative_path(located, report.source_root), f.site.source->line};
    if (std::filesystem::path(f.site.source->file).is_relative()) return {f.site.source->file, f.site.source->line};
  }
  return {relative_path(trace.path, report.source_root), 1};
}

std::string uri_reference(std::string_view path) {
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

std::string finding_message(const Finding& f) {
  std::string text = f.message;
  text += " (saves ~" + format::fixed(f.saving_ms_per_step, 3) + " ms per step, " + format::fixed(f.saving_pct, 1) +
          "% of step time; confidence " + std::string(to_string(f.confidence)) + ")";
  if (!f.fix.empty()) text += ". Fix: " + f.fix;
  return text;
}

// Workflow-command data: GitHub decodes %25, %0D and %0A. Other control bytes (ESC sequences that rewrite
// the log line, backspaces, C1 controls) come from trace names nobody vetted: they are shown as \xNN and
// never reach the log raw.
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
  // Other control characters are made visible: an ESC or NUL from a trace name must not reach the
  // runner's log raw (CR and LF, which could start a forged command, are escaped above).
  return format::visible(out);
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
  if (text == "html") return OutputFormat::Html;
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
    case OutputFormat::Html: return "html";
  }
  return "text";
}

void print_report(const Report& report, OutputFormat format, std::ostream& out, const PrintOptions& options) {
  switch (format) {
    case OutputFormat::Text: print_text(report, out, options); break;
    case OutputFormat::Json: print_json(report, out); break;
    case OutputFormat::Sarif: print_sarif(report, out); break;
    case OutputFormat::Github: print_github(report, out, options.github_limit_per_level); break;
    case OutputFormat::Junit: print_junit(report, out); break;
    case OutputFormat::Markdown: print_markdown(report, out); break;
    case OutputFormat::Html: print_html(report, out); break;
  }
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

}  // namespace ptadvise
