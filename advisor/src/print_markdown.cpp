// Markdown reports for pull-request comments and GitHub job summaries.
#include <ostream>

#include "format.h"
#include "print_job.h"
#include "ptadvise/advisor.h"

namespace ptadvise {

namespace {

using format::fixed;
using format::pct_of_step;
using format::md_cell;
using format::md_code;

}  // namespace

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
      out << (trace.coverage.ran == 0 ? "No rule could check this trace (see the coverage line).\n\n" : "No findings.\n\n");
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
