// libFuzzer harness for the whole check pipeline: arbitrary bytes (plain or gzip) are loaded, analysed,
// checked by the shipped rules, replayed (what-if), ranked, fingerprinted, baselined and printed in every
// format, plus the summary and the annotation track. Any crash, sanitizer report, hang or leak is a bug,
// and so is output a terminal or a CI log would act on (ci_log_safety.h): names in the input are arbitrary.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <streambuf>
#include <string_view>
#include <variant>

#include "ptadvise/advisor.h"
#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "ptadvise/summary_printer.h"
#include "ci_log_safety.h"

namespace {

const ptadvise::RuleSet& shipped_rules() {
  static const ptadvise::RuleSet rules = [] {
    auto loaded = ptadvise::load_rules({ptadvise::default_rules_directory()});
    if (!std::holds_alternative<ptadvise::RuleSet>(loaded)) __builtin_trap();  // the shipped rules must load
    return std::get<ptadvise::RuleSet>(std::move(loaded));
  }();
  return rules;
}

// Takes what a printer writes and keeps only its length. The HTML report embeds its 1 MB chart library,
// which an std::ostringstream grew into on every execution (most of the fixed cost of an input); nothing
// reads that report back here, so it is printed in full, into this.
class CountingBuffer : public std::streambuf {
 public:
  size_t bytes() const { return bytes_; }

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) ++bytes_;
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char*, std::streamsize count) override {
    bytes_ += static_cast<size_t>(count);
    return count;
  }

 private:
  size_t bytes_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ptadvise::RuleSet& rules = shipped_rules();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto loaded = ptadvise::load_trace_bytes(bytes, "fuzz.json");
  auto* timeline = std::get_if<ptadvise::Timeline>(&loaded);
  if (timeline == nullptr) return 0;
  (void)ptadvise::partial_trace_problem(*timeline);

  ptadvise::Analysis analysis = ptadvise::analyze(*timeline);
  ptadvise::Summary summary = ptadvise::summarize(analysis);
  std::ostringstream sink;

  ptadvise::Report report;
  report.tool_version = "fuzz";
  report.rules = rules.infos();
  ptadvise::TraceReport trace;
  trace.path = timeline->path;
  trace.rank = timeline->rank;
  trace.step_count = summary.step_count;
  trace.step_ms = summary.step_period_ms;
  trace.gpu_busy_pct = summary.gpu_busy_pct;
  trace.has_gpu = !analysis.devices.empty();
  trace.warnings = timeline->stats.warnings;
  ptadvise::EvaluateOptions selection;
  selection.predict = false;  // one what-if graph below, as `check` does
  trace.findings = ptadvise::evaluate(rules, analysis, selection, &trace.coverage);
  const ptadvise::WhatIf whatif(analysis);
  whatif.predict_findings(trace.findings);
  trace.prediction = whatif.predict_steps(trace.findings, nullptr, true);  // with the spans --annotate draws
  ptadvise::testing::trap_unless_ci_log_safe(ptadvise::summary_text(summary, &trace.prediction));
  ptadvise::testing::trap_unless_ci_log_safe(ptadvise::summary_json(summary, 2, &trace.prediction));
  ptadvise::rank_findings(trace.findings);
  for (auto& finding : trace.findings) {
    if (finding.fingerprint.empty()) finding.fingerprint = ptadvise::fingerprint(finding);
  }
  trace.recoverable_ms = ptadvise::recoverable_ms_per_step(trace.findings, trace.step_ms);
  trace.new_finding.assign(trace.findings.size(), true);
  trace.summary = summary;
  report.traces.push_back(trace);

  for (auto format : {ptadvise::OutputFormat::Text, ptadvise::OutputFormat::Json, ptadvise::OutputFormat::Sarif,
                      ptadvise::OutputFormat::Github, ptadvise::OutputFormat::Junit,
                      ptadvise::OutputFormat::Markdown, ptadvise::OutputFormat::Html}) {
    ptadvise::PrintOptions options;
    options.width = 60;  // long names get split over lines
    if (format == ptadvise::OutputFormat::Html) {
      CountingBuffer counted;
      std::ostream html(&counted);
      ptadvise::print_report(report, format, html, options);
      if (counted.bytes() == 0) __builtin_trap();  // a report was written
      continue;
    }
    std::ostringstream printed;
    ptadvise::print_report(report, format, printed, options);
    ptadvise::testing::trap_unless_ci_log_safe(printed.str(), format == ptadvise::OutputFormat::Github);
  }
  ptadvise::PrintOptions colour;
  colour.color = true;
  ptadvise::print_report(report, ptadvise::OutputFormat::Text, sink, colour);
  std::ostringstream baseline_text;
  ptadvise::write_baseline(ptadvise::make_baseline(trace.findings), baseline_text);
  auto reread = ptadvise::parse_baseline(baseline_text.str(), "fuzz-baseline.yaml");
  // A baseline we wrote must read back, and match every finding it came from.
  if (!std::holds_alternative<ptadvise::Baseline>(reread)) __builtin_trap();
  auto match = ptadvise::match_baseline(std::get<ptadvise::Baseline>(reread), trace.findings);
  for (bool known : match.in_baseline) {
    if (!known) __builtin_trap();
  }
  sink << ptadvise::annotation_events(trace.findings, &trace.prediction);
  return 0;
}
