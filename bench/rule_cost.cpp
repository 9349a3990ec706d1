// What `check` spends after loading, per stage and per rule: loads one trace once (with the args keys
// `check` keeps), then times analyze() and each rule run alone, REPS times each, and prints the fastest runs,
// costliest rules first. Timing in-process repeats the same work on warm data, so a change of a few ms in
// one rule shows where whole-command timings drown it in the loader's noise.
// RULE (an id) times that rule alone, for a profiler.
//   rule_cost TRACE [REPS=5] [RULES_DIR] [RULE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"

using namespace ptadvise;

namespace {

// The fastest run: on a machine shared with other work the slower ones measure the others too.
double fastest_ms(const std::vector<double>& samples) {
  return samples.empty() ? 0.0 : *std::min_element(samples.begin(), samples.end()) * 1e3;
}

template <class Work>
double fastest_ms_of(int reps, Work work) {
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return fastest_ms(samples);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rule_cost TRACE [REPS=5] [RULES_DIR] [RULE]\n");
    return 2;
  }
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  auto rules_loaded = load_rules({argc > 3 && *argv[3] != '\0' ? argv[3] : default_rules_directory()});
  const std::string only = argc > 4 ? argv[4] : "";
  if (auto* error = std::get_if<RuleError>(&rules_loaded)) {
    std::fprintf(stderr, "%s\n", error->message.c_str());
    return 2;
  }
  const RuleSet& rules = std::get<RuleSet>(rules_loaded);
  LoadOptions load;
  load.arg_keys = std::make_shared<const ArgKeySet>(kept_arg_keys(rules.arg_keys()));
  auto loaded = load_trace_file(argv[1], load);
  if (auto* error = std::get_if<LoadError>(&loaded)) {
    std::fprintf(stderr, "%s\n", error->message.c_str());
    return 2;
  }
  const Timeline& timeline = std::get<Timeline>(loaded);
  const Analysis analysis = analyze(timeline);
  EvaluateOptions options;
  options.predict = false;  // as `check` runs the rules: the what-if comes after
  if (!only.empty()) {
    options.only = {only};
    std::printf("%s %.1f ms\n", only.c_str(), fastest_ms_of(reps, [&] { (void)evaluate(rules, analysis, options); }));
    return 0;
  }
  const double analyze_ms = fastest_ms_of(reps, [&] { (void)analyze(timeline); });
  const double all_ms = fastest_ms_of(reps, [&] { (void)evaluate(rules, analysis, options); });
  std::vector<std::pair<double, std::string>> per_rule;
  for (const RuleInfo& info : rules.infos()) {
    EvaluateOptions alone = options;
    alone.only = {info.id};
    per_rule.emplace_back(fastest_ms_of(reps, [&] { (void)evaluate(rules, analysis, alone); }), info.id);
  }
  std::sort(per_rule.begin(), per_rule.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::printf("events %zu, strings %zu; fastest of %d runs: analyze %.1f ms, all rules %.1f ms\n", timeline.events.size(), timeline.strings.size(), reps,
              analyze_ms, all_ms);
  for (const auto& [ms, id] : per_rule) std::printf("  %s %.1f ms\n", id.c_str(), ms);
  return 0;
}
