// Savings by replay: each finding's transform applied to the step graph, and all of them together. One
// graph and one unchanged replay per trace serve every prediction (WhatIf).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ptadvise/rules.h"

namespace ptadvise {
namespace {

// A finding's fixes, with the idle stretches the ledger charged to it for the transforms that move only
// that host time (background with host_time: charged_idle).
std::vector<whatif::Fix> fixes_of(const Finding& finding) {
  std::vector<whatif::Fix> fixes = finding.fixes;
  for (whatif::Fix& fix : fixes) {
    if (fix.spec.host_time == whatif::TransformSpec::HostTime::ChargedIdle) fix.idle_gaps = finding.idle_gaps;
  }
  return fixes;
}

// A batch-size fix changes what a step is (factor x the samples): its prediction is per sample, and it
// stays out of the all-fixes replay, whose steps keep their batch.
bool changes_batch(const Finding& finding) {
  return std::any_of(finding.fixes.begin(), finding.fixes.end(),
                     [](const whatif::Fix& fix) { return fix.spec.primitive == whatif::Primitive::Batch; });
}

std::vector<whatif::Fix> fixes_of(const std::vector<Finding>& findings, size_t* count) {
  std::vector<whatif::Fix> fixes;
  for (const Finding& finding : findings) {
    if (!in_all_fixes_replay(finding)) continue;
    std::vector<whatif::Fix> own = fixes_of(finding);
    fixes.insert(fixes.end(), own.begin(), own.end());
    if (count) ++*count;
  }
  return fixes;
}

// What the user needs to read a per-sample prediction: the factor, why that factor, both step times.
std::string batch_note(const Analysis& analysis, const whatif::BatchFactor& batch, double step_ms,
                       double per_step_samples_ms) {
  char text[900];
  std::string why_factor;
  if (batch.memory_limit > 0) {
    const whatif::MemoryUse use = whatif::memory_use(analysis);
    if (use.known()) {
      std::snprintf(text, sizeof text,
                    " (the steps hold %.2f GiB and peak at %.2f GiB of %.2f GiB, room for %gx the batch; at %gx the "
                    "GPU work that grows with it, %.3f ms per step today, fills the step, and a larger batch adds "
                    "little throughput in this model)",
                    static_cast<double>(use.held) / (1 << 30), static_cast<double>(use.peak) / (1 << 30),
                    static_cast<double>(use.device_bytes) / (1 << 30), batch.memory_limit, batch.factor, batch.gpu_ms);
    } else {
      std::snprintf(text, sizeof text, " (the trace has no [memory] events to tell the headroom: no larger batch)");
    }
    why_factor = text;
  }
  std::snprintf(text, sizeof text,
                " The batch grows %gx%s; GPU work that grows with the batch takes %gx its time, except each kernel's "
                "first %.1f us (the steps' shortest kernel: a part of every kernel that does not grow; %.3f ms per "
                "step), host work keeps its own. The replay gives %.3f ms per step of %gx the samples, %.3f ms for "
                "the samples of one step today: the predicted step is per sample (throughput), and this fix is not "
                "in the trace's all-fixes replay.",
                batch.factor, why_factor.c_str(), batch.factor, batch.kernel_fixed_us, batch.fixed_gpu_ms, step_ms,
                batch.factor, per_step_samples_ms);
  return text;
}

double ledger_prediction(double measured, const Finding& finding) {
  return measured > 0 ? std::max(0.0, measured - finding.saving_ms_per_step) : 0.0;
}

}  // namespace

bool in_all_fixes_replay(const Finding& finding) { return !finding.fixes.empty() && !changes_batch(finding); }

std::vector<whatif::Fix> all_fixes(const std::vector<Finding>& findings) { return fixes_of(findings, nullptr); }

WhatIf::WhatIf(const Analysis& analysis) : analysis_(analysis) {
  if (analysis.steady_step_count() == 0 || analysis.step_period_ns() <= 0 || analysis.timeline == nullptr) return;
  graph_ = whatif::build_graph(analysis, whatif::replay_window(analysis));
  base_ = whatif::replay(graph_);
  available_ = base_.steady_steps > 0;
}

void WhatIf::predict_findings(std::vector<Finding>& findings) const {
  const double measured = analysis_.step_period_ns() / 1e6;
  // A finding whose rule declares a transform saves min(its ledger claim, what the replay of its fix
  // alone takes off the step): the claim says which nanoseconds are its own (each is claimed once), the
  // replay how much of them shortens the step. Findings without a transform keep the claim.
  for (Finding& finding : findings) {
    finding.saving_basis = "ledger";
    finding.predicted_step_ms = ledger_prediction(measured, finding);
    if (!available_ || finding.fixes.empty()) continue;
    const std::vector<whatif::Fix> fixes = fixes_of(finding);
    whatif::BatchFactor batch_factor;
    double batch = 1.0;  // the batch grows this many times: the step then holds that many times the samples
    for (const whatif::Fix& fix : fixes) {
      if (fix.spec.primitive == whatif::Primitive::Batch) batch_factor = whatif::batch_factor(graph_, fix);
      if (fix.spec.primitive == whatif::Primitive::Batch) batch *= batch_factor.factor;
    }
    const double fixed_step = whatif::replay(graph_, fixes, whatif::PathDetail::None).replayed_step_ms;
    const double fixed = fixed_step / batch;  // per the samples of one step as measured
    // The replay's own error cancels: the saving is what the transform changes in the replay.
    const double replayed_saving = std::max(0.0, base_.replayed_step_ms - fixed);
    const double claim = finding.saving_ms_per_step;
    finding.predicted_step_ms = std::max(0.0, measured - replayed_saving);
    finding.saving_ms_per_step = std::min(claim, replayed_saving);
    finding.saving_pct = measured > 0 ? finding.saving_ms_per_step / measured * 100.0 : 0.0;
    finding.saving_basis = "ledger+replay";
    std::string why = "Replay of the step graph with the fix alone (docs/WHATIF.md): " + finding.fixes.front().method;
    if (!why.empty() && why.back() != '.') why += '.';
    if (changes_batch(finding)) why += batch_note(analysis_, batch_factor, fixed_step, fixed);
    char numbers[200];
    if (replayed_saving + 5e-4 < claim) {
      std::snprintf(numbers, sizeof numbers,
                    " The step ledger gives it %.3f ms per step; the replay shortens the step by %.3f ms (the rest "
                    "of the step waits on other work), which is the saving.",
                    claim, replayed_saving);
    } else {
      std::snprintf(numbers, sizeof numbers,
                    " The replay shortens the step by %.3f ms per step; the saving is the %.3f ms the step ledger "
                    "gives it (the rest is claimed by other findings or is not its own).",
                    replayed_saving, claim);
    }
    finding.saving_method += (finding.saving_method.empty() ? "" : " ") + why + numbers;
    if (finding.noise_floor_ms > 0 && finding.saving_ms_per_step < finding.noise_floor_ms &&
        claim >= finding.noise_floor_ms) {
      // Still reported: the cause is there (its claim passed the floor), but the step waits on other work.
      // It informs and never fails a gate (ranking.cpp, is_failing).
      finding.saving_method += " That is below the rule's noise floor: fix what the step waits on first "
                               "(the critical path), then this; until then it does not fail a gate.";
    }
  }
}

StepPrediction WhatIf::predict_steps(const std::vector<Finding>& findings, whatif::ReplayResult* fixed_replay,
                                     bool with_spans) const {
  StepPrediction out;
  if (!available_) return out;
  out.available = true;
  out.origin_ns = analysis_.timeline->file_origin_ns;  // the file's own time base (what Perfetto shows)
  out.measured_step_ms = analysis_.step_period_ns() / 1e6;
  out.replayed_step_ms = base_.replayed_step_ms;
  out.replayed_steps = base_.steady_steps;
  out.steady_steps = analysis_.steady_step_count();
  out.first_replayed_step = graph_.window.measured_first;
  out.window_measured_step_ms = base_.measured_step_ms;
  out.discrepancy = whatif::replay_discrepancy(graph_, base_);
  out.critical_ms = base_.critical_ms;
  out.critical_top = base_.critical_top;
  const Timeline& timeline = *analysis_.timeline;
  if (with_spans) {
    // The unchanged replay again, keeping its pieces this time: base_ keeps only their totals.
    const whatif::ReplayResult pieces = whatif::replay(graph_, {}, whatif::PathDetail::Pieces);
    out.critical_path.reserve(pieces.critical_path.size());
    for (const auto& piece : pieces.critical_path) {
      CriticalSpan span;
      span.category = piece.category;
      span.step = piece.step;
      span.start_ns = piece.start_ns;
      span.end_ns = piece.end_ns;
      if (piece.node < graph_.nodes.size()) {
        EventIndex e = graph_.nodes[piece.node].event;
        span.name = e != kNone ? std::string(timeline.name(e)) : "(host gap)";
      } else {
        span.name = std::string(whatif::to_string(piece.category)) + " wait";
      }
      out.critical_path.push_back(std::move(span));
    }
  }
  for (const Finding& finding : findings) {
    if (finding.fixes.empty()) ++out.ledger_only;
    else if (changes_batch(finding)) ++out.per_sample_only;
  }
  std::vector<whatif::Fix> fixes = fixes_of(findings, &out.fixes_applied);
  whatif::ReplayResult fixed = fixes.empty() ? base_ : whatif::replay(graph_, fixes);
  out.predicted_step_ms =
      std::max(0.0, out.measured_step_ms - std::max(0.0, base_.replayed_step_ms - fixed.replayed_step_ms));
  out.critical_ms_fixed = fixed.critical_ms;
  out.critical_top_fixed = fixed.critical_top;
  if (fixed_replay != nullptr) *fixed_replay = std::move(fixed);
  return out;
}

void predict_findings(const Analysis& analysis, std::vector<Finding>& findings) {
  const bool any = std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return !f.fixes.empty(); });
  if (!any) {
    predict_from_ledger(analysis, findings);
    return;
  }
  WhatIf(analysis).predict_findings(findings);
}

StepPrediction predict_steps(const Analysis& analysis, const std::vector<Finding>& findings) {
  return WhatIf(analysis).predict_steps(findings);
}

void predict_from_ledger(const Analysis& analysis, std::vector<Finding>& findings) {
  const double measured = analysis.step_period_ns() / 1e6;
  for (Finding& finding : findings) {
    finding.saving_basis = "ledger";
    finding.predicted_step_ms = ledger_prediction(measured, finding);
  }
}

}  // namespace ptadvise
