// whatif::join_model: a rank's replay as a function of when its collectives end. Evaluated at the ends the
// rank's own replay gives its collectives, it must give back that replay's starts of those collectives
// (the model is the same max-plus system, cut at the collectives' ends), with and without fixes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/job.h"
#include "ptadvise/loader.h"
#include "ptadvise/whatif.h"

using namespace ptadvise;

namespace {

struct Checked {
  size_t collectives = 0;  // in the replay window
  size_t exact = 0;        // arrival evaluated at the replayed ends == replayed start
  size_t above = 0;        // evaluated later than the replay: never allowed (every term is a real path)
};

// The communication kernels of the replay window, as the job digest picks them.
std::vector<uint32_t> collective_nodes(const whatif::Graph& graph) {
  const Timeline& timeline = *graph.analysis->timeline;
  std::vector<uint32_t> nodes;
  for (uint32_t n = 0; n < graph.nodes.size(); ++n) {
    const whatif::Node& node = graph.nodes[n];
    if (node.kind != whatif::NodeKind::GpuOp || node.event == kNone) continue;
    if (!graph.window.measures(node.step)) continue;
    if (communication_kernel(timeline.name(node.event))) nodes.push_back(n);
  }
  return nodes;
}

Checked check_join(const whatif::Graph& graph, const std::vector<whatif::Fix>& fixes) {
  Checked out;
  const std::vector<uint32_t> nodes = collective_nodes(graph);
  const whatif::ReplayResult replayed = whatif::replay(graph, fixes, whatif::PathDetail::None);
  const whatif::JoinModel model = whatif::join_model(graph, nodes, fixes);
  std::vector<int64_t> ends;
  for (uint32_t n : nodes) ends.push_back(replayed.end_ns(n));
  REQUIRE(model.arrival.size() == nodes.size());
  CHECK(model.exact);  // its own self-check agrees
  for (size_t c = 0; c < nodes.size(); ++c) {
    const int64_t at = model.arrival[c].at(ends);
    ++out.collectives;
    if (at == replayed.start_ns(nodes[c])) ++out.exact;
    if (at > replayed.start_ns(nodes[c])) ++out.above;
  }
  return out;
}

Analysis analysis_of(const Timeline& timeline) { return analyze(timeline); }

}  // namespace

TEST_CASE("join model: evaluated at its own replay's ends, it gives back the replay's collective starts") {
  auto loaded = load_trace_file(PTADVISE_SOURCE_DIR "/testdata/job/loader_straggler/rank-0.json");
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  const Timeline& timeline = std::get<Timeline>(loaded);
  const Analysis analysis = analysis_of(timeline);
  const whatif::Graph graph = whatif::build_graph(analysis);
  Checked unchanged = check_join(graph, {});
  CHECK(unchanged.collectives == 6);  // one per step, all six steady
  CHECK(unchanged.exact == unchanged.collectives);
  // The loader's work removed: the model moves with the fix.
  whatif::Fix fix;
  fix.spec.primitive = whatif::Primitive::Remove;
  for (EventIndex e = 0; e < timeline.events.size(); ++e) {
    if (timeline.name(e).starts_with("enumerate(DataLoader)")) fix.events.push_back(e);
  }
  REQUIRE(fix.events.size() == 6);
  Checked fixed = check_join(graph, {fix});
  CHECK(fixed.exact == fixed.collectives);
  // And the steps: each step's first GPU op is the step's compute kernel, a pure function of the ends of
  // the collectives before it (the copy for loss.item() waits on them), except in the first step.
  const whatif::JoinModel model = whatif::join_model(graph, collective_nodes(graph));
  REQUIRE(model.steps.size() == 6);  // the six measured steps (no step after them)
  CHECK(model.steps.front().gpu_first.free_ns != whatif::kNoTime);
  CHECK(model.steps[2].gpu_first.terms.size() == 1);
}

TEST_CASE("corpus: join models give back their traces' replays at every collective" * doctest::test_suite("corpus")) {
  const std::filesystem::path traces = std::filesystem::path(PTADVISE_SHARED_DIR) / "traces";
  if (!std::filesystem::is_directory(traces)) {
    MESSAGE("skipped: " << traces.string() << " is absent (the shared traces live beside the project)");
    return;
  }
  size_t traces_with_collectives = 0, collectives = 0, exact = 0;
  for (const auto& entry : std::filesystem::directory_iterator(traces)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".json") && !name.ends_with(".json.gz")) continue;
    CAPTURE(name);
    auto loaded = load_trace_file(entry.path().string());
    if (!std::holds_alternative<Timeline>(loaded)) continue;
    const Timeline& timeline = std::get<Timeline>(loaded);
    const Analysis analysis = analysis_of(timeline);
    if (analysis.steady_step_count() == 0) continue;
    const whatif::Graph graph = whatif::build_graph(analysis, whatif::replay_window(analysis));
    if (collective_nodes(graph).empty()) continue;
    ++traces_with_collectives;
    const Checked checked = check_join(graph, {});
    CHECK(checked.above == 0);
    collectives += checked.collectives;
    exact += checked.exact;
    MESSAGE(name << ": " << checked.exact << " of " << checked.collectives << " collective starts exact");
  }
  MESSAGE(traces_with_collectives << " traces with collectives, " << exact << " of " << collectives << " exact");
  CHECK(exact == collectives);
}

TEST_CASE("join model: paths of huge delays saturate as the replay's times do, never overflow") {
  // Delays of 2^60 ns on every edge (what a batch grown 1,024x could make of a trace of long ops): the
  // replay saturates at 2^61 ns; the model's longest paths summed the same delays without a bound and
  // passed int64's limit (undefined behaviour) after eight edges.
  auto loaded = load_trace_file(PTADVISE_SOURCE_DIR "/testdata/job/loader_straggler/rank-0.json");
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  const Timeline& timeline = std::get<Timeline>(loaded);
  const Analysis analysis = analysis_of(timeline);
  whatif::Graph graph = whatif::build_graph(analysis);
  for (whatif::Edge& edge : graph.edges) edge.delay_ns = int64_t{1} << 60;
  const std::vector<uint32_t> nodes = collective_nodes(graph);
  REQUIRE(nodes.size() == 6);
  const whatif::JoinModel model = whatif::join_model(graph, nodes);
  const int64_t limit = int64_t{1} << 61;
  size_t terms = 0, saturated = 0;
  auto check_time = [&](const whatif::JoinTime& time) {
    if (time.free_ns != whatif::kNoTime) CHECK(std::abs(time.free_ns) <= limit);
    for (const whatif::JoinTerm& term : time.terms) {
      ++terms;
      CHECK(term.delay_ns >= 0);
      CHECK(term.delay_ns <= limit);
      if (term.delay_ns == limit) ++saturated;
    }
  };
  for (const whatif::JoinTime& arrival : model.arrival) check_time(arrival);
  for (const whatif::JoinStep& step : model.steps) {
    check_time(step.host_start);
    check_time(step.gpu_first);
  }
  CHECK(terms > 0);
  CHECK(saturated > 0);
  // Evaluated at the replay's saturated ends, every instant stays within the bound.
  const whatif::ReplayResult replayed = whatif::replay(graph, {}, whatif::PathDetail::None);
  std::vector<int64_t> ends;
  for (uint32_t n : nodes) ends.push_back(replayed.end_ns(n));
  for (const whatif::JoinTime& arrival : model.arrival) CHECK(std::abs(arrival.at(ends)) <= limit);
}
