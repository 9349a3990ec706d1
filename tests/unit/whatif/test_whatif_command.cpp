// `ptadvise whatif` (run_whatif) and the `transform:` section's validation.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <variant>

#include "ptadvise/advisor.h"
#include "ptadvise/rules.h"

using namespace ptadvise;

namespace {
const std::string kLoader = std::string(PTADVISE_SOURCE_DIR) + "/testdata/scenarios/05_dataloader_num_workers_0.json.gz";

std::string rule_with(const std::string& transform) {
  return "id: PTA901\nname: test-rule\nseverity: warning\ntags: [sync]\nsummary: A test rule.\nfix: Do not.\n"
         "docs: {what: w, why: y, example: e, fix: f}\nselect:\n  syncs: {kind: cpu_op, name: \"aten::item\"}\n"
         "group: {by: [op]}\nmessage: \"{site.op}\"\nsaving: {ms_per_step: time_ms, method: own time}\n" +
         transform;
}

std::string error_of(const std::string& text) {
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

TEST_CASE("transform: primitives and parameters are validated with their position") {
  CHECK(error_of(rule_with("transform:\n  apply:\n    - remove: {}\n  method: gone\n")) == "(no error)");
  CHECK(error_of(rule_with("transform:\n  apply:\n    - vanish: {}\n  method: gone\n")) ==
        "r.yaml:15:7: transform.apply: unknown primitive 'vanish'; expected remove, scale, make_async, fuse, overlap or background");
  CHECK(error_of(rule_with("transform:\n  apply:\n    - scale: {}\n  method: m\n")) ==
        "r.yaml:15:14: transform.apply.scale: expected exactly one of table or factor");
  CHECK(error_of(rule_with("transform:\n  apply:\n    - scale: {table: magic}\n  method: m\n")) ==
        "r.yaml:15:22: transform.apply.scale.table: expected tensor_cores or pinned_copy, got 'magic'");
  CHECK(error_of(rule_with("transform:\n  apply:\n    - remove: {select: nope}\n  method: m\n")) ==
        "r.yaml:14:3: transform.apply.select: no selection named 'nope'");
  CHECK(error_of(rule_with("transform:\n  apply:\n    - remove: {}\n")) ==
        "r.yaml:14:3: transform.method: expected a non-empty string");
}
