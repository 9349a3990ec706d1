// Text (terminal) and Markdown (PR comments, step summaries) reports.
#include <ostream>

#include "format.h"
#include "print_job.h"
#include "ptadvise/advisor.h"

namespace ptadvise {

namespace {

using format::fixed;

struct Palette {
  bool on = false;
  std::string paint(std::string_view text, const char* code) const {
    if (!on) return std::string(text);
    return std::string("\x1b[") + code + "m" + std::string(text) + "\x1b[0m";
  }
  std::string severity(Severity s) const {
    const char* code = s == Severity::Error ? "1;31" : s == Severity::Warning ? "1;33" : "1;36";
    return paint(to_string(s), code);
  }
  std::string bold(std::string_view text) const { return paint(text, "1"); }
  std::string blue(std::string_view text) const { return paint(text, "1;34"); }
  std::string dim(std::string_view text) const { return paint(text, "2"); }
};

std::string pct_of_step(double ms, double step_ms) {
  if (step_ms <= 0) return "n/a";
  return fixed(100.0 * ms / step_ms, 1) + "%";
}

void print_trace_header(const TraceReport& trace, std::ostream& out, const Palette& p) {
  out << p.bold("ptadvise: " + format::trace_label(trace)) << "\n";
  out << "  ";
  if (!trace.device.empty()) out << trace.device << ", ";
  out << trace.step_count << (trace.step_count == 1 ? " step" : " steps");
  if (!trace.step_note.empty()) out << " (" << trace.step_note << ")";
  out << ", step time " << fixed(trace.step_ms, 3) << " ms, ";
  if (trace.has_gpu) {
    out << "GPU busy " << fixed(trace.gpu_busy_pct, 1) << "%\n";
  } else {
    out << "no GPU activity in the trace\n";
  }
  out << "  coverage: " << format::coverage_line(trace) << "\n";
  out << "  recoverable: ~" << fixed(trace.recoverable_ms, 3) << " ms per step ("
      << pct_of_step(trace.recoverable_ms, trace.step_ms) << " of step time) from " << trace.findings.size()
      << (trace.findings.size() == 1 ? " finding" : " findings") << ", each site counted once\n";
  // Load warnings go to stderr as they happen (run_check); repeating them here would print them twice.
  out << "\n";
}

void print_finding(const Report& report, const TraceReport& trace, size_t index, std::ostream& out,
                   const Palette& p) {
  const Finding& f = trace.findings[index];
  out << p.bold("#" + std::to_string(f.rank)) << " " << p.severity(f.severity) << p.bold("[" + f.rule_id + "]") << " "
      << p.bold(f.rule_name + ": " + f.message);
  if (!trace.new_finding.empty() && !trace.new_finding[index]) out << " " << p.dim("(in baseline)");
  out << "\n";
  std::string source = format::source_text(f);
  out << "  " << p.blue("-->") << " " << (source.empty() ? trace.path : source) << "\n";
  const std::string bar = "   " + p.blue("=") + " ";
  std::string site = describe_site(Site{f.site.op, f.site.kernel, f.site.op_chain, std::nullopt, f.site.detail});
  out << bar << "site: " << site << "\n";
  if (!f.site.detail.empty() && site != f.site.detail && f.site.detail != f.site.op && f.site.detail != f.site.kernel) out << bar << "detail: " << f.site.detail << "\n";
  out << bar << "cost: " << fixed(f.time_ms_per_step, 3) << " ms per step (" << fixed(f.count_per_step, 1)
      << " occurrences per step, in " << fixed(f.steps_present_pct, 0) << "% of steps)\n";
  for (const auto& evidence : f.evidence) out << bar << "evidence: " << format::evidence_text(evidence) << "\n";
  if (!f.fix.empty()) out << bar << p.bold("help") << ": " << f.fix << "\n";
  out << bar << p.bold("note") << ": saves ~" << fixed(f.saving_ms_per_step, 3) << " ms per step ("
      << fixed(f.saving_pct, 1) << "% of step time), confidence " << to_string(f.confidence);
  if (!f.saving_method.empty()) out << "; " << f.saving_method;
  out << "\n\n";
  (void)report;
}

std::string md_cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string md_code(std::string_view text) {
  if (text.find('`') != std::string_view::npos) return "``" + md_cell(text) + "``";
  return "`" + md_cell(text) + "`";
}

}  // namespace

void print_text(const Report& report, std::ostream& out, bool color) {
  Palette p{color};
  for (const auto& trace : report.traces) {
    print_trace_header(trace, out, p);
    if (trace.job) job_print::text(*trace.job, out);
    for (size_t i = 0; i < trace.findings.size(); ++i) print_finding(report, trace, i, out, p);
  }
  size_t total = report.finding_count();
  size_t failing = report.failing_count();
  if (total == 0) {
    out << p.paint("No findings.", "1;32");
  } else {
    out << "Found " << total << (total == 1 ? " finding" : " findings") << ", " << failing << " failing (--fail-on "
        << to_string(report.fail_on) << (report.has_baseline ? ", not in the baseline" : "") << ").";
  }
  if (report.suppressed > 0) out << " " << report.suppressed << " suppressed by `# ptadvise: ignore` comments.";
  out << "\n";
  if (!report.stale.empty()) {
    out << report.stale.size() << " baseline "
        << (report.stale.size() == 1 ? "entry no longer occurs" : "entries no longer occur")
        << " (remove with --prune-baseline):\n";
    for (const auto& entry : report.stale) {
      out << "  " << entry.fingerprint << " " << entry.rule_id << " " << entry.site << "\n";
    }
  }
}

void print_markdown(const Report& report, std::ostream& out) {
  out << "# ptadvise report\n\n";
  size_t total = report.finding_count();
  out << "**" << total << "** " << (total == 1 ? "finding" : "findings") << ", **" << report.failing_count()
      << "** failing (fail-on: " << to_string(report.fail_on) << (report.has_baseline ? ", baseline applied" : "")
      << ")";
  if (report.suppressed > 0) out << ", " << report.suppressed << " suppressed by comments";
  out << ".\n\n";
  for (const auto& trace : report.traces) {
    out << "## " << md_code(format::trace_label(trace)) << "\n\n";
    if (!trace.device.empty()) out << md_cell(trace.device) << " · ";
    out << trace.step_count << (trace.step_count == 1 ? " step" : " steps") << " · step time **"
        << fixed(trace.step_ms, 3) << " ms** · GPU busy **" << fixed(trace.gpu_busy_pct, 1)
        << "%** · recoverable **~" << fixed(trace.recoverable_ms, 3) << " ms per step ("
        << pct_of_step(trace.recoverable_ms, trace.step_ms) << ")**\n\n";
    out << "_coverage: " << md_cell(format::coverage_line(trace)) << "_\n\n";
    if (trace.job) job_print::markdown(*trace.job, out);
    for (const auto& warning : trace.warnings) out << "> warning: " << md_cell(warning) << "\n\n";
    if (trace.findings.empty()) {
      out << "No findings.\n\n";
      continue;
    }
    out << "| # | rule | severity | where | saving per step | confidence |\n"
           "|---:|---|---|---|---:|---|\n";
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      const Finding& f = trace.findings[i];
      std::string where = format::source_text(f);
      if (where.empty()) where = describe_site(f.site);
      out << "| " << f.rank << " | " << md_code(f.rule_id) << " " << md_cell(f.rule_name) << " | "
          << to_string(f.severity) << (!trace.new_finding.empty() && !trace.new_finding[i] ? " (baseline)" : "")
          << " | " << md_code(where) << " | " << fixed(f.saving_ms_per_step, 3) << " ms ("
          << fixed(f.saving_pct, 1) << "%) | " << to_string(f.confidence) << " |\n";
    }
    out << "\n";
    for (const auto& f : trace.findings) {
      out << "### " << f.rank << ". " << md_cell(f.rule_id) << " " << md_cell(f.rule_name) << "\n\n"
          << md_cell(f.message) << "\n\n";
      if (!f.fix.empty()) out << "- **Fix:** " << md_cell(f.fix) << "\n";
      out << "- **Estimate:** " << fixed(f.saving_ms_per_step, 3) << " ms per step, confidence "
          << to_string(f.confidence);
      if (!f.saving_method.empty()) out << " (" << md_cell(f.saving_method) << ")";
      out << "\n";
      for (const auto& evidence : f.evidence) out << "- Evidence: " << md_cell(format::evidence_text(evidence)) << "\n";
      out << "\n";
    }
  }
  if (!report.stale.empty()) {
    out << "## Stale baseline entries\n\n";
    for (const auto& entry : report.stale) {
      out << "- " << md_code(entry.fingerprint) << " " << md_cell(entry.rule_id) << " " << md_cell(entry.site) << "\n";
    }
    out << "\n";
  }
}

}  // namespace ptadvise
