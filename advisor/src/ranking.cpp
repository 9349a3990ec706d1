#include <algorithm>
#include <map>
#include <tuple>

#include "ptadvise/advisor.h"

namespace ptadvise {

namespace {

int severity_order(Severity severity) {
  switch (severity) {
    case Severity::Error: return 0;
    case Severity::Warning: return 1;
    case Severity::Info: return 2;
  }
  return 1;
}

// A finding that saves less than its rule's noise floor once replayed (the step waits on other work), or
// nothing measurable, informs but fails no gate (is_failing); it never outranks one that passes its floor.
bool below_floor(const Finding& finding) {
  return finding.saving_ms_per_step < std::max(0.0005, finding.noise_floor_ms);
}

// Orders the findings of one site the same way in every recording: by source line, then detail.
std::tuple<int, std::string, std::string> stable_key(const Finding& finding) {
  return {finding.site.source ? finding.site.source->line : 0, finding.site.detail, finding.message};
}

}  // namespace

void rank_findings(std::vector<Finding>& findings) {
  for (auto& finding : findings) finding.fingerprint = fingerprint(finding);

  // Disambiguate several findings of one rule at one site in an order that does not depend on timing.
  std::map<std::string, std::vector<size_t>> by_fingerprint;
  for (size_t i = 0; i < findings.size(); ++i) by_fingerprint[findings[i].fingerprint].push_back(i);
  for (auto& [print, indices] : by_fingerprint) {
    if (indices.size() < 2) continue;
    std::stable_sort(indices.begin(), indices.end(),
                     [&](size_t a, size_t b) { return stable_key(findings[a]) < stable_key(findings[b]); });
    for (size_t k = 1; k < indices.size(); ++k) findings[indices[k]].fingerprint = print + "-" + std::to_string(k + 1);
  }

  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (below_floor(a) != below_floor(b)) return below_floor(b);
    if (a.saving_ms_per_step != b.saving_ms_per_step) return a.saving_ms_per_step > b.saving_ms_per_step;
    if (a.severity != b.severity) return severity_order(a.severity) < severity_order(b.severity);
    if (a.rule_id != b.rule_id) return a.rule_id < b.rule_id;
    return a.fingerprint < b.fingerprint;
  });
  for (size_t i = 0; i < findings.size(); ++i) findings[i].rank = static_cast<int>(i + 1);
}

double recoverable_ms_per_step(const std::vector<Finding>& findings, double /*step_ms*/) {
  // The evaluator's claims already keep findings apart: each idle gap and GPU op is claimed once and the
  // savings of one trace never add up to more than its step (docs/ANALYSIS.md, "The step ledger"). So the
  // sum is shown as it is, never capped here.
  double total = 0;
  for (const auto& finding : findings) total += std::max(0.0, finding.saving_ms_per_step);
  return total;
}

bool is_failing(const Report& report, const TraceReport& trace, size_t finding_index) {
  const Finding& finding = trace.findings[finding_index];
  bool is_new = finding_index >= trace.new_finding.size() || trace.new_finding[finding_index];
  auto at_least = [](Severity s, Severity threshold) {
    return static_cast<int>(s) >= static_cast<int>(threshold);
  };
  // A finding that saves nothing measurable (0.000 ms: facts such as warm-up or memory headroom), or less
  // than its rule's noise floor once replayed (the step waits on other work), informs but never fails a gate.
  return is_new && at_least(finding.severity, report.fail_on) && !below_floor(finding);
}

size_t Report::failing_count() const {
  size_t count = 0;
  for (const auto& trace : traces) {
    for (size_t i = 0; i < trace.findings.size(); ++i) count += is_failing(*this, trace, i) ? 1 : 0;
  }
  return count;
}

size_t Report::finding_count() const {
  size_t count = 0;
  for (const auto& trace : traces) count += trace.findings.size();
  return count;
}

}  // namespace ptadvise
