// What the what-if replay adds to `check`: times the check pipeline's stages on one trace and reports
// (check with what-if) / (check without it). Goal (issue 10): at most 1.20 on the 270 MB benchmark trace.
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
  std::vector<Finding> findings = evaluate(rules, analysis);  // includes predict_findings
  const double evaluate_s = seconds_since(start);
  // The per-finding replays evaluate() ran, timed again on their own.
  std::vector<Finding> again = findings;
  start = std::chrono::steady_clock::now();
  predict_findings(analysis, again);
  const double per_finding_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  StepPrediction prediction = predict_steps(analysis, findings);
  const double trace_s = seconds_since(start);
  size_t nodes = 0, edges = 0;
  {
    whatif::Graph graph = whatif::build_graph(analysis);
    nodes = graph.nodes.size();
    edges = graph.edges.size();
  }
  const double with = load_s + analyze_s + evaluate_s + trace_s;
  const double without = with - per_finding_s - trace_s;
  std::printf("events %zu, graph nodes %zu, edges %zu, findings %zu (%zu replayed)\n", timeline.events.size(), nodes,
              edges, findings.size(), prediction.fixes_applied);
  std::printf("load %.3f s, analyze %.3f s, evaluate %.3f s (of which per-finding replays %.3f s), trace replay %.3f s\n",
              load_s, analyze_s, evaluate_s, per_finding_s, trace_s);
  std::printf("measured %.3f ms, replayed %.3f ms, predicted %.3f ms\n", prediction.measured_step_ms,
              prediction.replayed_step_ms, prediction.predicted_step_ms);
  std::printf("check with what-if / without: %.3f\n", without > 0 ? with / without : 0.0);
  return 0;
}
