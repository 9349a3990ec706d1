// add_join(): a rank's step replay as a function of when its collectives end, kept in its digest so the
// job can replay its ranks together after every trace is freed (docs/WHATIF.md, "Jobs").
#include "ptadvise/job.h"

namespace ptadvise {
namespace {

// Graph times are the trace's own (ts); a digest's are absolute, as CollectiveCall's.
void make_absolute(whatif::JoinModel& model, int64_t origin) {
  auto shift = [origin](whatif::JoinTime& time) {
    if (time.free_ns != whatif::kNoTime) time.free_ns += origin;
  };
  for (whatif::JoinTime& time : model.arrival) shift(time);
  for (whatif::JoinStep& step : model.steps) {
    shift(step.host_start);
    shift(step.gpu_first);
  }
}

}  // namespace

void add_join(RankDigest& digest, const Analysis& analysis, const WhatIf& whatif, const std::vector<Finding>& findings,
              const StepPrediction& prediction, const whatif::ReplayResult* fixed_replay) {
  RankJoin join;
  const whatif::Graph& graph = whatif.graph();
  // Only a rank that talks to others is joined; the rest pay nothing for it.
  if (!whatif.available() || analysis.timeline == nullptr || graph.nodes.empty() || digest.collectives.empty()) return;
  std::vector<uint32_t> nodes;
  join.in_window.reserve(digest.collectives.size());
  for (const CollectiveCall& call : digest.collectives) {
    uint32_t node = call.event < graph.node_of_event.size() ? graph.node_of_event[call.event] : kNone;
    if (node != kNone && !graph.window.measures(graph.nodes[node].step)) node = kNone;
    nodes.push_back(node);
    join.in_window.push_back(node != kNone ? 1 : 0);
  }
  // The what-if's own replays, unchanged and with every fix, serve the models: none is replayed twice.
  join.unchanged = whatif::join_model(graph, nodes, {}, &whatif.base());
  join.fixed = whatif::join_model(graph, nodes, all_fixes(findings), fixed_replay);
  const int64_t origin = analysis.timeline->origin_ns;
  make_absolute(join.unchanged, origin);
  make_absolute(join.fixed, origin);
  for (const whatif::JoinStep& step : join.unchanged.steps) {
    join.step_numbers.push_back(analysis.steps[step.step].number);
    join.measured.push_back(graph.window.measures(step.step) && analysis.is_steady(step.step) ? 1 : 0);
    join.measured_period_ns.push_back(analysis.steps[step.step].period_ns);
  }
  join.predicted_step_ms = prediction.predicted_step_ms;
  join.exact = join.unchanged.exact && join.fixed.exact;
  join.available = !join.step_numbers.empty();
  digest.join = std::move(join);
}

}  // namespace ptadvise
