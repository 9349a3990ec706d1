// What the what-if replay adds to `check`: times the check pipeline's stages on one trace and reports
// (the stages with the what-if) / (without it). bench/whatif_cost.sh times the whole `check` command with
// and without `--no-whatif`. Goal (issue 10): at most 1.20 on the 270 MB benchmark trace.
//   whatif_cost TRACE [RULES_DIR]
#include <chrono>
#include <cstdio>
#include <variant>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "ptadvise/whatif.h"

using namespace ptadvise;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: whatif_cost TRACE [RULES_DIR]\n");
    return 2;
  }
  auto rules_loaded = load_rules({argc > 2 ? argv[2] : default_rules_directory()});
  if (auto* error = std::get_if<RuleError>(&rules_loaded)) {
    std::fprintf(stderr, "%s\n", error->message.c_str());
    return 2;
  }
  const RuleSet& rules = std::get<RuleSet>(rules_loaded);
  auto start = std::chrono::steady_clock::now();
  auto loaded = load_trace_file(argv[1]);
  if (auto* error = std::get_if<LoadError>(&loaded)) {
    std::fprintf(stderr, "%s\n", error->message.c_str());
    return 2;
  }
  const Timeline& timeline = std::get<Timeline>(loaded);
  const double load_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  Analysis analysis = analyze(timeline);
  const double analyze_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  EvaluateOptions options;
  options.predict = false;  // as `check` runs it: the what-if comes after
  std::vector<Finding> findings = evaluate(rules, analysis, options);
  const double evaluate_s = seconds_since(start);
  // The what-if as `check` runs it: one graph over the replay window, the unchanged replay, one replay per
  // finding with a transform, one with all of them.
  start = std::chrono::steady_clock::now();
  const WhatIf whatif(analysis);
  const double graph_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  whatif.predict_findings(findings);
  const double per_finding_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  StepPrediction prediction = whatif.predict_steps(findings);
  const double trace_s = seconds_since(start);
  const whatif::StepWindow window = whatif::replay_window(analysis);
  const double without = load_s + analyze_s + evaluate_s;
  const double with = without + graph_s + per_finding_s + trace_s;
  std::printf("events %zu, steps %zu (%zu steady, %zu replayed from step %u), findings %zu (%zu replayed)\n",
              timeline.events.size(), analysis.steps.size(), analysis.steady_step_count(), prediction.replayed_steps,
              window.measured_first, findings.size(), prediction.fixes_applied);
  std::printf("load %.3f s, analyze %.3f s, evaluate %.3f s; what-if: graph and unchanged replay %.3f s, "
              "per-finding replays %.3f s, all fixes %.3f s\n",
              load_s, analyze_s, evaluate_s, graph_s, per_finding_s, trace_s);
  std::printf("measured %.3f ms (replayed steps: measured %.3f ms, replayed %.3f ms), predicted %.3f ms\n",
              prediction.measured_step_ms, prediction.window_measured_step_ms, prediction.replayed_step_ms,
              prediction.predicted_step_ms);
  std::printf("in-process stages with what-if / without: %.3f\n", without > 0 ? with / without : 0.0);
  return 0;
}
