// The JSON report: one document built with nlohmann::json and written by its serializer.
#include <ostream>

#include "ptadvise/bad_alloc_shield.h"
#include "format.h"
#include "print_job.h"
#include "whatif_format.h"
#include "ptadvise/schema_versions.h"
#include "report_doc.h"
#include "summary_doc.h"

namespace ptadvise {

using jsondoc::Json;
using jsondoc::number;

Json finding_document(const Report& report, const TraceReport& trace, size_t index) {
  const Finding& f = trace.findings[index];
  const bool is_new = trace.new_finding.empty() || trace.new_finding[index];
  Json evidence = Json::array();
  for (const Evidence& e : f.evidence) {
    Json ts = number(static_cast<double>(e.file_ts_ns) / 1000.0, 3);
    evidence.push_back({{"step", e.step_number >= 0 ? Json(e.step_number) : Json(nullptr)},
                        {"ts_us", ts},
                        {"dur_ms", number(static_cast<double>(e.dur_ns) / 1e6, 3)},
                        {"event", e.event},
                        {"track", e.track}});
  }
  Json source = nullptr;
  if (f.site.source) {
    source = {{"file", f.site.source->file}, {"line", f.site.source->line}, {"function", f.site.source->function}};
  }
  Json docs = nullptr;
  if (const RuleInfo* rule = format::rule_info(report, f.rule_id)) {
    docs = {{"summary", rule->summary}, {"what", rule->docs.what}, {"why", rule->docs.why}, {"fix", rule->docs.fix}};
  }
  Json document;
  document["rank"] = f.rank;
  document["rule_id"] = f.rule_id;
  if (!f.ranks.empty()) document["ranks"] = f.ranks;
  document["rule_name"] = f.rule_name;
  document["severity"] = to_string(f.severity);
  document["tags"] = f.tags;
  document["message"] = f.message;
  document["fix"] = f.fix;
  document["fingerprint"] = f.fingerprint;
  document["new"] = is_new;
  document["failing"] = is_failing(report, trace, index);
  document["site"] = {{"description", describe_site(f.site)},
                      {"op", f.site.op},
                      {"kernel", f.site.kernel},
                      {"op_chain", f.site.op_chain},
                      {"detail", f.site.detail}};
  document["source"] = std::move(source);
  document["count_per_step"] = number(f.count_per_step, 3);
  document["time_ms_per_step"] = number(f.time_ms_per_step, 3);
  document["steps_present_pct"] = number(f.steps_present_pct, 1);
  document["saving_ms_per_step"] = number(f.saving_ms_per_step, 3);
  document["saving_pct"] = number(f.saving_pct, 2);
  document["saving_method"] = f.saving_method;
  document["saving_basis"] = f.saving_basis;
  document["predicted_step_ms"] = number(f.predicted_step_ms, 3);
  document["confidence"] = to_string(f.confidence);
  document["evidence"] = std::move(evidence);
  document["docs"] = std::move(docs);
  return document;
}

Json report_document(const Report& report) {
  Json baseline = nullptr;
  if (report.has_baseline) {
    Json stale = Json::array();
    for (const auto& e : report.stale) stale.push_back({{"fingerprint", e.fingerprint}, {"rule_id", e.rule_id}, {"site", e.site}});
    baseline = {{"stale", std::move(stale)}};
  }
  Json traces = Json::array();
  for (const TraceReport& trace : report.traces) {
    Json not_run = Json::array();
    for (const auto& [id, reason] : trace.coverage.not_run) not_run.push_back({{"id", id}, {"reason", reason}});
    Json findings = Json::array();
    for (size_t i = 0; i < trace.findings.size(); ++i) findings.push_back(finding_document(report, trace, i));
    Json item;
    item["path"] = trace.path;
    item["rank"] = trace.rank ? Json(*trace.rank) : Json(nullptr);
    item["device"] = trace.device;
    item["steps"] = trace.step_count;
    item["step_note"] = trace.step_note;
    item["step_ms"] = number(trace.step_ms, 3);
    item["gpu_busy_pct"] = number(trace.gpu_busy_pct, 2);
    if (trace.summary) {
      item["compute_busy_pct"] = number(trace.summary->compute_busy_pct, 2);
      item["communication_pct"] = number(trace.summary->communication_pct, 2);
      item["copy_pct"] = number(trace.summary->copy_pct, 2);
      item["idle_pct"] = number(trace.summary->idle_pct, 2);
    }
    item["recoverable_ms_per_step"] = number(trace.recoverable_ms, 3);
    item["recoverable_pct"] = number(trace.step_ms > 0 ? 100.0 * trace.recoverable_ms / trace.step_ms : 0.0, 2);
    item["warnings"] = trace.warnings;
    item["coverage"] = {{"rules_run", trace.coverage.ran},
                        {"rules_not_run", std::move(not_run)},
                        {"text", format::coverage_line(trace)}};
    if (trace.summary) item["summary"] = summary_document(*trace.summary);
    item["whatif"] = format::whatif_document(trace.prediction);
    if (trace.job) item["job"] = job_print::document(*trace.job);
    item["findings"] = std::move(findings);
    traces.push_back(std::move(item));
  }
  Json document;
  document["schema_version"] = kCheckSchemaVersion;
  document["tool"] = {{"name", "ptadvise"}, {"version", report.tool_version}};
  document["fail_on"] = to_string(report.fail_on);
  document["findings_total"] = report.finding_count();
  document["findings_failing"] = report.failing_count();
  document["suppressed"] = report.suppressed;
  document["baseline"] = std::move(baseline);
  document["traces"] = std::move(traces);
  return document;
}

void print_json(const Report& report, std::ostream& out) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  jsondoc::write(out, report_document(report));
}

}  // namespace ptadvise
