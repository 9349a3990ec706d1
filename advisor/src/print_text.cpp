// The terminal report. Lines are wrapped to the terminal width (words move to the next line, nothing is
// cut); text that comes from the trace passes through format::visible so control characters never reach
// the terminal raw; colours are {fmt}'s text styles. The default layout of a finding is in
// print_text_finding.cpp.
#include <algorithm>
#include <ostream>

#include "format.h"
#include "print_job.h"
#include "text_layout.h"
#include "whatif_format.h"
#include "ptadvise/advisor.h"

namespace ptadvise {

namespace {

using format::fixed;
using format::pct_of_step;
using format::visible;
using text::Palette;
using text::wrapped;

// "once per step", "2 times per step", "0.5 times per step".
std::string times_per_step(double count) {
  if (count == 1) return "once per step";
  return (count == std::floor(count) ? fixed(count, 0) : fixed(count, 1)) + " times per step";
}

// "train.py:42 in train_step", else the trace file.
std::string location(const TraceReport& trace, const Finding& f) {
  std::string source = format::source_text(f);
  return visible(source.empty() ? trace.path : source);
}

bool accepted(const TraceReport& trace, size_t index) {
  return !trace.new_finding.empty() && !trace.new_finding[index];
}

size_t accepted_count(const TraceReport& trace) {
  size_t n = 0;
  for (size_t i = 0; i < trace.findings.size(); ++i) n += accepted(trace, i) ? 1 : 0;
  return n;
}

void print_trace_header(const TraceReport& trace, std::ostream& out, const Palette& p, size_t width) {
  wrapped(out, p.bold("ptadvise:") + " ", 10, visible(format::trace_label(trace)), width, 4);
  // One fact per line, so that each fits 80 columns: the steps, where the GPU's time goes, what was
  // checked, what is recoverable.
  std::string steps;
  if (!trace.device.empty()) steps += visible(trace.device) + ", ";
  steps += std::to_string(trace.step_count) + (trace.step_count == 1 ? " step of " : " steps of ") +
           fixed(trace.step_ms, 3) + " ms";
  // The figures are per mean step; when some steps take far longer than the rest (an evaluation pass or a
  // checkpoint every few steps), the typical step is not that long, and the reader should know.
  if (trace.summary && trace.summary->steady_steps >= 3 && trace.summary->median_step_ms > 0) {
    const double ratio = trace.step_ms / trace.summary->median_step_ms;
    if (ratio >= 1.25 || ratio <= 0.8) steps += " on average, median " + fixed(trace.summary->median_step_ms, 3) + " ms";
  }
  if (!trace.step_note.empty()) steps += " (" + visible(trace.step_note) + ")";
  wrapped(out, "  ", 2, steps, width, 4);
  std::string busy = trace.has_gpu ? "GPU busy " + fixed(trace.gpu_busy_pct, 1) + "%" : "no GPU activity in the trace";
  if (trace.has_gpu && trace.summary) {  // a waiting GPU is not a busy one: communication and copies apart
    busy += ": compute " + fixed(trace.summary->compute_busy_pct, 1) + "%, communication " +
            fixed(trace.summary->communication_pct, 1) + "%, copies " + fixed(trace.summary->copy_pct, 1) + "%";
  }
  wrapped(out, "  ", 2, busy, width, 4);
  wrapped(out, "  ", 2, "coverage: " + format::visible(format::coverage_line(trace)), width, 4);
  wrapped(out, "  ", 2,
          "recoverable: ~" + format::short_number(trace.recoverable_ms) + " ms/step (" +
              pct_of_step(trace.recoverable_ms, trace.step_ms) + ") from " + std::to_string(trace.findings.size()) +
              (trace.findings.size() == 1 ? " finding" : " findings") + ", no time counted twice",
          width, 4);
  for (const std::string& headline : format::whatif_headline(trace.prediction)) wrapped(out, "  ", 2, headline, width, 4);
  // Load warnings go to stderr as they happen (run_check); repeating them here would print them twice.
  out << "\n";
}

void print_title(const Finding& f, std::ostream& out, const Palette& p, size_t width) {
  const std::string rank = "#" + std::to_string(f.rank);
  const std::string severity(to_string(f.severity));
  const std::string id = "[" + f.rule_id + "]";
  const std::string prefix = p.bold(rank) + " " + p.severity(f.severity) + p.bold(id) + " ";
  const size_t prefix_columns = rank.size() + 1 + severity.size() + id.size() + 1;
  wrapped(out, prefix, prefix_columns, f.rule_name + ": " + visible(f.message), width, 4);
}

// Everything: site, detail, each evidence item, the estimate's method.
void print_finding_verbose(const TraceReport& trace, const Finding& f, std::ostream& out, const Palette& p,
                           size_t width) {
  print_title(f, out, p, width);
  wrapped(out, "  " + p.blue("-->") + " ", 6, location(trace, f), width, 6);
  const std::string bar = "   " + p.blue("=") + " ";
  std::string site = describe_site(Site{f.site.op, f.site.kernel, f.site.op_chain, std::nullopt, f.site.detail});
  wrapped(out, bar, 5, "site: " + visible(site), width, 5);
  if (!f.site.detail.empty() && site != f.site.detail && f.site.detail != f.site.op && f.site.detail != f.site.kernel) {
    wrapped(out, bar, 5, "detail: " + visible(f.site.detail), width, 5);
  }
  wrapped(out, bar, 5,
          "cost: " + fixed(f.time_ms_per_step, 3) + " ms per step (" + times_per_step(f.count_per_step) + ", in " +
              fixed(f.steps_present_pct, 0) + "% of steps)",
          width, 5);
  for (const auto& evidence : f.evidence) {
    wrapped(out, bar, 5, "evidence: " + visible(format::evidence_text(evidence)), width, 5);
  }
  if (!f.fix.empty()) wrapped(out, bar + p.bold("help") + ": ", 11, visible(f.fix), width, 5);
  std::string note = "saves ~" + fixed(f.saving_ms_per_step, 3) + " ms per step (" + fixed(f.saving_pct, 1) +
                     "% of step time), confidence " + std::string(to_string(f.confidence));
  if (!f.saving_method.empty()) note += "; " + f.saving_method;
  wrapped(out, bar + p.bold("note") + ": ", 11, note, width, 5);
  out << "\n";
}

// file: severity[ID] name: message (saves X ms/step, Y%)
void print_finding_concise(const TraceReport& trace, const Finding& f, std::ostream& out, const Palette& p,
                           size_t width) {
  std::string where = format::source_text(f).empty() ? trace.path
                      : f.site.source->line > 0
                          ? f.site.source->file + ":" + std::to_string(f.site.source->line)
                          : f.site.source->file;
  where = visible(where) + ": ";
  // One line, never wrapped: made for grep and editors' quickfix lists, like ruff's concise output.
  (void)width;
  out << where << p.severity(f.severity) << p.bold("[" + f.rule_id + "]") << " " << f.rule_name << ": "
      << visible(f.message) << " (saves " << fixed(f.saving_ms_per_step, 3) << " ms/step, " << fixed(f.saving_pct, 1)
      << "%)\n";
}

}  // namespace

void print_text(const Report& report, std::ostream& out, const PrintOptions& options) {
  Palette p{options.color};
  const size_t width = options.width;
  size_t accepted_total = 0;
  for (const auto& trace : report.traces) {
    accepted_total += accepted_count(trace);
    if (options.detail != TextDetail::Concise) print_trace_header(trace, out, p, width);
    if (options.detail != TextDetail::Concise && trace.job) job_print::text(*trace.job, out, width);
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      if (accepted(trace, i)) continue;  // counted below, not printed
      const Finding& f = trace.findings[i];
      switch (options.detail) {
        case TextDetail::Concise: print_finding_concise(trace, f, out, p, width); break;
        case TextDetail::Default: text::print_finding_default(f, out, p, width); break;
        case TextDetail::Verbose: print_finding_verbose(trace, f, out, p, width); break;
      }
    }
  }
  size_t total = report.finding_count();
  size_t failing = report.failing_count();
  std::string closing;
  if (total > 0) {
    closing = "Found " + std::to_string(total) + (total == 1 ? " finding" : " findings") + ", " +
              std::to_string(failing) + " failing (--fail-on " + std::string(to_string(report.fail_on)) +
              (report.has_baseline ? ", not in the baseline" : "") + ").";
    if (accepted_total > 0) {
      closing += " " + std::to_string(accepted_total) + " accepted in the baseline, not shown.";
    }
  }
  if (report.suppressed > 0) {
    closing += (closing.empty() ? "" : " ") + std::to_string(report.suppressed) +
               " suppressed by `# ptadvise: ignore` comments.";
  }
  if (options.detail == TextDetail::Concise && total > 0) out << "\n";
  // Nothing found because nothing could look is no clean result: say so instead of "No findings".
  const bool none_checked =
      !report.traces.empty() && std::all_of(report.traces.begin(), report.traces.end(),
                                            [](const TraceReport& trace) { return trace.coverage.ran == 0; });
  const std::string empty = none_checked ? "No rule could check " +
                                               std::string(report.traces.size() == 1 ? "the trace" : "these traces") +
                                               " (see the coverage line)."
                                         : p.green("No findings.");
  const size_t empty_width = none_checked ? empty.size() + 1 : 13;  // "No findings." and a space
  if (total > 0) {
    wrapped(out, "", 0, closing, width, 0);
  } else if (closing.empty()) {
    out << empty << "\n";
  } else {
    wrapped(out, empty + " ", empty_width, closing, width, 0);
  }
  if (!report.stale.empty()) {
    out << report.stale.size() << " baseline "
        << (report.stale.size() == 1 ? "entry no longer occurs" : "entries no longer occur")
        << " (remove with --prune-baseline):\n";
    for (const auto& entry : report.stale) {
      wrapped(out, "  ", 2, entry.fingerprint + " " + entry.rule_id + " " + visible(entry.site), width, 4);
    }
  }
}

}  // namespace ptadvise
