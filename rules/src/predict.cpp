// Savings by replay: each finding's transform applied to the step graph, and all of them together.
#include <algorithm>
#include <cmath>

#include "ptadvise/rules.h"

namespace ptadvise {
namespace {

std::vector<whatif::Fix> fixes_of(const std::vector<Finding>& findings, size_t* count) {
  std::vector<whatif::Fix> fixes;
  for (const Finding& finding : findings) {
    if (finding.fixes.empty()) continue;
    fixes.insert(fixes.end(), finding.fixes.begin(), finding.fixes.end());
    if (count) ++*count;
  }
  return fixes;
}

}  // namespace

void predict_findings(const Analysis& analysis, std::vector<Finding>& findings) {
  const double measured = analysis.step_period_ns() / 1e6;
  const bool any = std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return !f.fixes.empty(); });
  std::optional<whatif::Graph> graph;
  double base = 0;
  if (any && measured > 0) {
    graph = whatif::build_graph(analysis);
    base = whatif::replay(*graph, {}, false).replayed_step_ms;
  }
  // The saving stays the ledger's claim (docs/ANALYSIS.md): every nanosecond is claimed by one finding,
  // so savings add up and rank consistently. The replay of the finding's own fix, alone, gives the step
  // it predicts (predicted_step_ms); the replay of all fixes together is predict_steps().
  for (Finding& finding : findings) {
    finding.saving_basis = "ledger";
    double predicted = measured - finding.saving_ms_per_step;
    if (graph && !finding.fixes.empty()) {
      const double fixed = whatif::replay(*graph, finding.fixes, false).replayed_step_ms;
      // The replay's own error cancels: the saving is what the transform changes in the replay.
      const double replayed_saving = std::max(0.0, base - fixed);
      predicted = measured - replayed_saving;
      finding.saving_basis = "ledger+replay";
      finding.saving_method += (finding.saving_method.empty() ? "" : " ") + std::string("Replay of the step graph with the fix alone (docs/WHATIF.md): ") +
                               finding.fixes.front().method;
    }
    finding.predicted_step_ms = measured > 0 ? std::max(0.0, predicted) : 0.0;
  }
}

StepPrediction predict_steps(const Analysis& analysis, const std::vector<Finding>& findings) {
  StepPrediction out;
  if (analysis.steady_step_count() == 0 || analysis.step_period_ns() <= 0) return out;
  whatif::Graph graph = whatif::build_graph(analysis);
  whatif::ReplayResult base = whatif::replay(graph);
  out.available = true;
  out.origin_ns = analysis.timeline->file_origin_ns;  // the file's own time base (what Perfetto shows)
  out.measured_step_ms = base.measured_step_ms;
  out.replayed_step_ms = base.replayed_step_ms;
  out.discrepancy = whatif::replay_discrepancy(graph, base);
  out.critical_ms = base.critical_ms;
  out.critical_top = base.critical_top;
  const Timeline& timeline = *analysis.timeline;
  for (const auto& piece : base.critical_path) {
    CriticalSpan span;
    span.category = piece.category;
    span.step = piece.step;
    span.start_ns = piece.start_ns;
    span.end_ns = piece.end_ns;
    if (piece.node < graph.nodes.size()) {
      EventIndex e = graph.nodes[piece.node].event;
      span.name = e != kNone ? std::string(timeline.name(e)) : "(host gap)";
    } else {
      span.name = std::string(whatif::to_string(piece.category)) + " wait";
    }
    out.critical_path.push_back(std::move(span));
  }
  for (const Finding& finding : findings) {
    if (finding.fixes.empty()) ++out.ledger_only;
  }
  std::vector<whatif::Fix> fixes = fixes_of(findings, &out.fixes_applied);
  whatif::ReplayResult fixed = fixes.empty() ? base : whatif::replay(graph, fixes);
  out.predicted_step_ms = std::max(0.0, out.measured_step_ms - std::max(0.0, base.replayed_step_ms - fixed.replayed_step_ms));
  out.critical_ms_fixed = fixed.critical_ms;
  out.critical_top_fixed = fixed.critical_top;
  return out;
}

}  // namespace ptadvise
