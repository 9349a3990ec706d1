// `ptadvise whatif` (run_whatif), the `transform:` section's validation, summary's critical path and the
// replay window.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <variant>

#include "ptadvise/advisor.h"
#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "ptadvise/summary_printer.h"
#include "ptadvise/whatif.h"

using namespace ptadvise;

namespace {
const std::string kLoader = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/05_dataloader_num_workers_0.json.gz";

std::string whatif_rule_with(const std::string& transform) {
  return "id: PTA901\nname: test-rule\nseverity: warning\ntags: [sync]\nsummary: A test rule.\nfix: Do not.\n"
         "docs: {what: w, why: y, example: e, fix: f}\nselect:\n  syncs: {kind: cpu_op, name: \"aten::item\"}\n"
         "group: {by: [op]}\nmessage: \"{site.op}\"\nsaving: {ms_per_step: time_ms, method: own time}\n" +
         transform;
}

std::string whatif_error_of(const std::string& text) {
  auto result = load_rule_text(text, "r.yaml");
  if (auto* error = std::get_if<RuleError>(&result)) return error->message;
  return "(no error)";
}
}  // namespace

TEST_CASE("whatif command: the data-loader fix on the num_workers=0 scenario") {
  WhatifOptions options;
  options.trace = kLoader;
  options.apply = {"data-loader-stall"};
  options.format = "json";
  std::ostringstream out, err;
  CHECK(run_whatif(options, out, err) == 0);
  const std::string json = out.str();
  CHECK(json.find("\"measured_step_ms\": 9.567") != std::string::npos);
  CHECK(json.find("\"replayed_step_ms\": 9.567") != std::string::npos);
  CHECK(json.find("\"predicted_step_ms_all_fixes\": 4.067") != std::string::npos);
  CHECK(json.find("\"applied\": true") != std::string::npos);

  options.format = "text";
  std::ostringstream text;
  CHECK(run_whatif(options, text, err) == 0);
  CHECK(text.str().find("predicted step: 4.067 ms with 1 fix applied together") != std::string::npos);
  CHECK(text.str().find("critical path before: data loader") != std::string::npos);
}

TEST_CASE("whatif command: only findings whose fix is replayed are marked applied, the others say why") {
  // 16: two findings without a transform and a batch-size fix (predicted per sample, alone): none is in
  // the all-fixes replay, so the prediction is the replayed step with 0 fixes.
  WhatifOptions options;
  options.trace = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/16_small_batch_memory_underused.json.gz";
  options.format = "json";
  std::ostringstream out, err;
  REQUIRE(run_whatif(options, out, err) == 0);
  const auto document = nlohmann::json::parse(out.str());
  CHECK(document.at("whatif").at("fixes_replayed") == 0);
  const auto& findings = document.at("findings");
  REQUIRE(findings.size() == 3);
  for (const auto& finding : findings) {
    CAPTURE(finding.dump());
    CHECK(finding.at("applied") == false);
    const std::string why = finding.at("not_applied");
    const bool batch = finding.at("rule_id") == "PTA118";
    CHECK(why == (batch ? "a batch-size fix: predicted per sample, alone"
                        : "its rule declares no transform: the saving is the ledger's estimate"));
  }
  options.format = "text";
  std::ostringstream text;
  REQUIRE(run_whatif(options, text, err) == 0);
  CHECK(text.str().find("[applied]") == std::string::npos);
  CHECK(text.str().find("with 0 fixes applied together") != std::string::npos);
  // The two ledger-only findings are marked, and their shared reason is said once, under the list; the
  // batch-size fix says its own under it.
  auto count = [&text](std::string_view what) {
    size_t n = 0;
    for (size_t at = text.str().find(what); at != std::string::npos; at = text.str().find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("\n    [ledger]  PTA") == 2);
  CHECK(count("[ledger]: not in the replay: its rule declares no transform: the saving is the ledger's estimate\n") == 1);
  CHECK(count("not in the replay: a batch-size fix: predicted per sample, alone\n") == 1);

  // A finding with a transform that --apply did not name is neither applied nor explained.
  options.trace = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/12_empty_cache_every_step.json.gz";
  options.format = "json";
  std::ostringstream all;
  REQUIRE(run_whatif(options, all, err) == 0);
  const auto every = nlohmann::json::parse(all.str()).at("findings");
  REQUIRE(every.size() == 3);  // PTA104 (no transform), PTA114 and PTA121 (both replayed)
  CHECK(every[0].at("applied") == false);
  CHECK(every[1].at("applied") == true);
  CHECK(every[2].at("applied") == true);
  options.apply = {every[1].at("fingerprint").get<std::string>()};
  std::ostringstream one;
  REQUIRE(run_whatif(options, one, err) == 0);
  const auto picked = nlohmann::json::parse(one.str());
  CHECK(picked.at("whatif").at("fixes_replayed") == 1);
  const auto& listed = picked.at("findings");
  REQUIRE(listed.size() == 3);
  CHECK(listed[1].at("applied") == true);
  for (size_t i : {size_t{0}, size_t{2}}) {
    CHECK(listed[i].at("applied") == false);
    CHECK_FALSE(listed[i].contains("not_applied"));
  }
}

TEST_CASE("whatif command: a trace without findings says so") {
  WhatifOptions options;
  options.trace = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/well_tuned.json.gz";
  std::ostringstream out, err;
  REQUIRE(run_whatif(options, out, err) == 0);
  CHECK(out.str().find("findings (predicted step when fixed alone):\n    (none)\n") != std::string::npos);
}

TEST_CASE("whatif command: --apply names a rule, a rule name or a fingerprint of the trace") {
  WhatifOptions options;
  options.trace = kLoader;
  options.apply = {"PTA999"};
  std::ostringstream out, err;
  CHECK(run_whatif(options, out, err) == 2);
  CHECK(err.str().find("--apply PTA999: no rule id, rule name or finding fingerprint of this trace") != std::string::npos);
  options.apply = {"sync-in-step"};
  std::ostringstream err2;
  CHECK(run_whatif(options, out, err2) == 2);
  CHECK(err2.str() == "ptadvise: error: --apply sync-in-step: the rule reports nothing on this trace\n");
}

TEST_CASE("whatif command: the findings are check's, with the same selection and configuration") {
  // A scenario with three findings: whatif lists what check reports, with the same predictions.
  const std::string trace = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/12_empty_cache_every_step.json.gz";
  CheckOptions check;
  check.traces = {trace};
  check.format = "json";
  check.exit_zero = true;
  std::ostringstream check_out, check_err;
  REQUIRE(run_check(check, check_out, check_err) == 0);
  const auto checked = nlohmann::json::parse(check_out.str()).at("traces").at(0).at("findings");
  REQUIRE(checked.size() >= 2);

  WhatifOptions options;
  options.trace = trace;
  options.format = "json";
  std::ostringstream out, err;
  REQUIRE(run_whatif(options, out, err) == 0);
  const auto listed = nlohmann::json::parse(out.str()).at("findings");
  REQUIRE(listed.size() == checked.size());
  for (size_t i = 0; i < listed.size(); ++i) {
    CAPTURE(i);
    CHECK(listed[i].at("rule_id") == checked[i].at("rule_id"));
    CHECK(listed[i].at("fingerprint") == checked[i].at("fingerprint"));
    CHECK(listed[i].at("predicted_step_ms").get<double>() ==
          doctest::Approx(checked[i].at("predicted_step_ms").get<double>()).epsilon(1e-9));
  }

  // --ignore (like check's) leaves the rule out, so its fix is not in the all-fixes prediction either.
  const std::string ignored = checked[0].at("rule_id").get<std::string>();
  options.ignore = {ignored};
  std::ostringstream without;
  REQUIRE(run_whatif(options, without, err) == 0);
  const auto rest = nlohmann::json::parse(without.str()).at("findings");
  CHECK(rest.size() == checked.size() - 1);
  for (const auto& finding : rest) CHECK(finding.at("rule_id") != ignored);

  // A configuration file is read like check's: a wrong one is exit 2 with its position.
  options.ignore.clear();
  options.config_path = std::string(PTADVISE_SOURCE_DIR) + "/testdata/no-such-config.yaml";
  std::ostringstream nothing, config_err;
  CHECK(run_whatif(options, nothing, config_err) == 2);
  CHECK(config_err.str().find("no-such-config.yaml") != std::string::npos);
}

TEST_CASE("transform: primitives and parameters are validated with their position") {
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - remove: {}\n  method: gone\n")) == "(no error)");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - vanish: {}\n  method: gone\n")) ==
        "r.yaml:15:7: transform.apply: unknown primitive 'vanish'; expected remove, scale, make_async, fuse, overlap, background or batch");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - background: {host_time: charged_idle}\n  method: m\n")) == "(no error)");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - background: {host_time: some}\n  method: m\n")) ==
        "r.yaml:15:31: transform.apply.background.host_time: expected events or charged_idle, got 'some'");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - batch: {factor: 8}\n  method: m\n")) == "(no error)");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - batch: {factor: 0.5}\n  method: m\n")) ==
        "r.yaml:15:23: transform.apply.batch.factor: expected a number from 1 to 1024, got '0.5'");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - batch: {factor: 8, memory_target: 0.5}\n  method: m\n")) ==
        "r.yaml:15:14: transform.apply.batch: expected at most one of factor or memory_target");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - scale: {}\n  method: m\n")) ==
        "r.yaml:15:14: transform.apply.scale: expected exactly one of table or factor");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - scale: {table: magic}\n  method: m\n")) ==
        "r.yaml:15:22: transform.apply.scale.table: expected tensor_cores or pinned_copy, got 'magic'");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - remove: {select: nope}\n  method: m\n")) ==
        "r.yaml:14:3: transform.apply.select: no selection named 'nope'");
  CHECK(whatif_error_of(whatif_rule_with("transform:\n  apply:\n    - remove: {}\n")) ==
        "r.yaml:14:3: transform.method: expected a non-empty string");
}

TEST_CASE("summary: the critical path of the replayed steps by category, in text and JSON") {
  auto loaded = load_trace_file(kLoader);
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  Analysis analysis = analyze(std::get<Timeline>(loaded));
  const Summary summary = summarize(analysis);
  const StepPrediction replay = WhatIf(analysis).predict_steps({});
  REQUIRE(replay.available);
  CHECK(replay.replayed_steps == 8);
  CHECK(replay.steady_steps == 8);
  const std::string text = summary_text(summary, &replay);
  // Every step waits for its batch on the host (num_workers=0), the last one too: its path is its host
  // interval, not the GPU's tail after it.
  CHECK(text.find("  critical path data loader 81.4%, host 18.6% of 9.567 ms per step (replay of 8 steady steps)\n") !=
        std::string::npos);
  CHECK(text.find("2.646 ms data loader: torch/utils/data/_utils/fetch.py(51): <listcomp>") != std::string::npos);
  const std::string json = summary_json(summary, 0, &replay);
  CHECK(json.find("\"critical_path\":{") != std::string::npos);
  CHECK(json.find("\"data loader\":7.784") != std::string::npos);
  CHECK(json.find("\"replayed_steps\":8") != std::string::npos);
  // Without a replay, no critical path.
  CHECK(summary_text(summary).find("critical path") == std::string::npos);
  CHECK(summary_json(summary, 0).find("critical_path") == std::string::npos);
}

TEST_CASE("predictions: the critical path's spans, with their events' names, only when asked for") {
  auto loaded = load_trace_file(kLoader);
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  Analysis analysis = analyze(std::get<Timeline>(loaded));
  const WhatIf whatif(analysis);
  const StepPrediction with_spans = whatif.predict_steps({}, nullptr, true);
  const StepPrediction without = whatif.predict_steps({});
  // The unchanged replay keeps the totals only; the pieces are replayed again for the spans.
  CHECK(whatif.base().critical_path.empty());
  const whatif::ReplayResult pieces = whatif::replay(whatif.graph(), {}, whatif::PathDetail::Pieces);
  REQUIRE(with_spans.critical_path.size() == pieces.critical_path.size());
  // Summed as the walk goes or from the kept pieces: the same shares and items.
  CHECK(pieces.critical_ms == whatif.base().critical_ms);
  REQUIRE(pieces.critical_top.size() == whatif.base().critical_top.size());
  for (size_t i = 0; i < pieces.critical_top.size(); ++i) {
    CHECK(pieces.critical_top[i].name == whatif.base().critical_top[i].name);
    CHECK(pieces.critical_top[i].ms_per_step == whatif.base().critical_top[i].ms_per_step);
  }
  // The pieces of each step come in time order, one after the other.
  for (size_t i = 1; i < pieces.critical_path.size(); ++i) {
    if (pieces.critical_path[i].step != pieces.critical_path[i - 1].step) continue;
    CHECK(pieces.critical_path[i].start_ns == pieces.critical_path[i - 1].end_ns);
  }
  REQUIRE(!with_spans.critical_path.empty());
  CHECK(without.critical_path.empty());
  // Everything else is the same.
  CHECK(without.critical_ms == with_spans.critical_ms);
  CHECK(without.critical_top.size() == with_spans.critical_top.size());
  CHECK(without.predicted_step_ms == with_spans.predicted_step_ms);
  // `check` asks for them only for the annotated trace, which draws them as a track.
  CHECK(annotation_events({}, &without).empty());
  CHECK(annotation_events({}, &with_spans).find("critical path (replay)") != std::string::npos);
}

TEST_CASE("replay window: a trace whose steps hold more events than the budget is replayed over a window") {
  auto loaded = load_trace_file(kLoader);
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  Analysis analysis = analyze(std::get<Timeline>(loaded));
  // Within the budget: every step.
  whatif::StepWindow all = whatif::replay_window(analysis);
  CHECK_FALSE(all.sampled);
  CHECK(all.first == 0);
  CHECK(all.last == analysis.steps.size() - 1);
  // 8 steady steps are the fewest a window holds: a tiny budget still replays them all.
  CHECK_FALSE(whatif::replay_window(analysis, 1).sampled);
  // A trace with more steady steps than that (11), on a budget of one event: the window is 8 steps.
  const std::string mtia = std::string(PTADVISE_SHARED_DIR) +
                           "/traces/HTA__tests__data__mtia_inference_trace__mtia_inference_rank_0.json.gz";
  auto big = load_trace_file(mtia);
  if (!std::holds_alternative<Timeline>(big)) {
    MESSAGE("skipped: " << mtia << " is absent (the shared traces live beside the project)");
    return;
  }
  Analysis steps = analyze(std::get<Timeline>(big));
  REQUIRE(steps.steady_step_count() == 11);
  const whatif::StepWindow window = whatif::replay_window(steps, 1);
  CHECK(window.sampled);
  CHECK(window.measured_last - window.measured_first + 1 == 8);
  // The window's measured mean is the closest to the trace's: here from the first step, which has no step
  // before it to hold in the graph; the step after the window is held.
  CHECK(window.measured_first == 0);
  CHECK(window.first == 0);
  CHECK(window.last == window.measured_last + 1);
  const whatif::Graph graph = whatif::build_graph(steps, window);
  const whatif::ReplayResult replayed = whatif::replay(graph);
  CHECK(replayed.steady_steps == 8);
  // Its replay reproduces it.
  CHECK(replayed.measured_step_ms == doctest::Approx(26.458).epsilon(0.001));
  CHECK(steps.step_period_ns() / 1e6 == doctest::Approx(26.2085).epsilon(0.001));
  CHECK(replayed.replayed_step_ms == doctest::Approx(replayed.measured_step_ms).epsilon(0.03));
}
