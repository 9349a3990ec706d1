#include <doctest/doctest.h>

#include "ptadvise/advisor.h"
#include "ptadvise/rules.h"
#include "temp_dir.h"

using namespace ptadvise;

namespace {

std::string rule_yaml(const std::string& id, const std::string& name, const std::string& tags) {
  return "id: " + id + "\nname: " + name + "\nseverity: warning\ntags: [" + tags +
         "]\nsummary: s\nfix: f\ndocs: {what: a, why: b, example: c, fix: d}\n"
         "thresholds:\n  min_count: {value: 1, unit: per step, doc: why}\n"
         "select:\n  ops: {kind: cpu_op, name: \"aten::" + name + "\"}\n"
         "group: {select: ops, by: [op]}\nwhen: {all: [count >= min_count]}\nmessage: m\n"
         "saving: {ms_per_step: time_ms, method: m}\n";
}

RuleSet three_rules(const testing::TempDir& dir) {
  dir.write("r/a.yaml", rule_yaml("PTX001", "alpha", "sync, gpu"));
  dir.write("r/b.yaml", rule_yaml("PTX002", "beta", "memcpy"));
  dir.write("r/c.yaml", rule_yaml("PTX003", "gamma", "sync"));
  auto loaded = load_rules({dir.file("r")});
  REQUIRE_MESSAGE(std::holds_alternative<RuleSet>(loaded), std::get<RuleError>(loaded).message);
  return std::move(std::get<RuleSet>(loaded));
}

EvaluateOptions resolved(const RuleSet& rules, const std::string& yaml) {
  auto config = parse_config(yaml, "cfg.yaml", "/repo");
  REQUIRE(std::holds_alternative<Config>(config));
  auto options = resolve_selection(std::get<Config>(config), rules);
  REQUIRE_MESSAGE(std::holds_alternative<EvaluateOptions>(options), std::get<ConfigError>(options).message);
  return std::get<EvaluateOptions>(options);
}

std::string resolve_error(const RuleSet& rules, const std::string& yaml) {
  auto config = parse_config(yaml, "cfg.yaml", "/repo");
  REQUIRE(std::holds_alternative<Config>(config));
  auto options = resolve_selection(std::get<Config>(config), rules);
  REQUIRE(std::holds_alternative<ConfigError>(options));
  return std::get<ConfigError>(options).message;
}

}  // namespace

TEST_CASE("select, extend-select and ignore by id, name and tag become skipped rule ids") {
  testing::TempDir dir;
  RuleSet rules = three_rules(dir);
  CHECK(resolved(rules, "").skip.empty());
  CHECK(resolved(rules, "").only.empty());
  CHECK(resolved(rules, "select: [sync]\n").skip == std::vector<std::string>{"PTX002"});
  CHECK(resolved(rules, "select: [beta]\n").skip == std::vector<std::string>{"PTX001", "PTX003"});
  CHECK(resolved(rules, "select: [PTX002]\nextend-select: [gamma]\n").skip == std::vector<std::string>{"PTX001"});
  CHECK(resolved(rules, "ignore: [sync]\n").skip == std::vector<std::string>{"PTX001", "PTX003"});
  CHECK(resolved(rules, "select: [sync]\nignore: [PTX003]\n").skip == std::vector<std::string>{"PTX002", "PTX003"});
}

TEST_CASE("per-rule overrides resolve names to ids and check threshold names") {
  testing::TempDir dir;
  RuleSet rules = three_rules(dir);
  EvaluateOptions options =
      resolved(rules, "rules:\n  beta:\n    severity: error\n    thresholds: {min_count: 3}\n  PTX001: {severity: info}\n");
  CHECK(options.severities.at("PTX002") == Severity::Error);
  CHECK(options.severities.at("PTX001") == Severity::Info);
  CHECK(options.thresholds.at("PTX002").at("min_count") == 3);

  CHECK(resolve_error(rules, "select: [PTX009]\n") ==
        "cfg.yaml:1:10: select: 'PTX009' is not a rule id, name or tag (did you mean PTX001?)");
  CHECK(resolve_error(rules, "fail-on: info\nignore:\n  - sync\n  - no-such-thing-at-all\n").rfind(
            "cfg.yaml:4:5: ignore: 'no-such-thing-at-all' is not a rule id, name or tag", 0) == 0);
  CHECK(resolve_error(rules, "fail-on: info\nrules:\n  delta: {severity: error}\n") ==
        "cfg.yaml:3:3: rules: 'delta' is not a rule id or name");
  CHECK(resolve_error(rules, "rules:\n  alpha:\n    thresholds: {min_cnt: 2}\n") ==
        "cfg.yaml:2:3: rules.alpha.thresholds: 'min_cnt' is not a threshold of PTX001 (it has min_count, min_saving_ms, min_saving_pct)");
}
