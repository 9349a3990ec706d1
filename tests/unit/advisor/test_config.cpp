#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "ptadvise/advisor.h"
#include "temp_dir.h"

using namespace ptadvise;

namespace {
Config parse_ok(const std::string& text) {
  auto parsed = parse_config(text, "cfg.yaml", "/repo");
  if (auto* error = std::get_if<ConfigError>(&parsed)) FAIL(error->message);
  return std::get<Config>(parsed);
}
std::string parse_error(const std::string& text) {
  auto parsed = parse_config(text, "cfg.yaml", "/repo");
  auto* error = std::get_if<ConfigError>(&parsed);
  REQUIRE(error != nullptr);
  return error->message;
}
}  // namespace

TEST_CASE("a full configuration parses") {
  Config config = parse_ok(
      "select: [PTA101, sync]\n"
      "extend-select: memcpy\n"
      "ignore:\n"
      "  - tiny-kernel-storm\n"
      "fail-on: error\n"
      "rule-directories: [ci/rules, /abs/rules]\n"
      "kernel-families: families.yaml\n"
      "source-root: src\n"
      "baseline: .ptadvise-baseline.yaml\n"
      "rules:\n"
      "  PTA101:\n"
      "    severity: error\n"
      "    thresholds: {min_idle_pct: 2.5, min_steps_pct: 50}\n"
      "  pageable-copy:\n"
      "    severity: info\n");
  CHECK(config.select == std::vector<std::string>{"PTA101", "sync"});
  CHECK(config.extend_select == std::vector<std::string>{"memcpy"});
  CHECK(config.ignore == std::vector<std::string>{"tiny-kernel-storm"});
  CHECK(config.fail_on == Severity::Error);
  CHECK(config.rule_directories == std::vector<std::string>{"/repo/ci/rules", "/abs/rules"});
  CHECK(config.kernel_families == std::vector<std::string>{"/repo/families.yaml"});
  CHECK(config.source_root == "/repo/src");
  CHECK(config.baseline == "/repo/.ptadvise-baseline.yaml");
  REQUIRE(config.rules.size() == 2);
  CHECK(config.rules[0].rule == "PTA101");
  CHECK(config.rules[0].line == 11);
  CHECK(config.rules[0].column == 3);
  CHECK(config.rules[0].severity == Severity::Error);
  CHECK(config.rules[0].thresholds.at("min_idle_pct") == 2.5);
  CHECK(config.rules[0].thresholds.at("min_steps_pct") == 50);
  CHECK(config.rules[1].rule == "pageable-copy");
  CHECK(config.rules[1].severity == Severity::Info);
}

TEST_CASE("an empty configuration means defaults") {
  Config config = parse_ok("");
  CHECK(config.select.empty());
  CHECK(!config.fail_on);
  CHECK(config.rules.empty());
}

TEST_CASE("configuration errors name file, line, column and what was expected") {
  CHECK(parse_error("select: [PTA101]\nfail_on: error\n") ==
        "cfg.yaml:2:1: fail_on: unknown key (expected select, extend-select, ignore, rules, rule-directories, "
        "kernel-families, fail-on, source-root or baseline)");
  CHECK(parse_error("fail-on: loud\n") == "cfg.yaml:1:10: fail-on: expected info, warning or error, got 'loud'");
  CHECK(parse_error("select: {a: 1}\n") == "cfg.yaml:1:9: select: expected a rule id, name or tag, or a list of them");
  CHECK(parse_error("rules:\n  PTA101:\n    severity: error\n    threshold: 3\n") ==
        "cfg.yaml:4:5: rules.PTA101.threshold: unknown key (expected severity or thresholds)");
  CHECK(parse_error("rules:\n  PTA101:\n    thresholds: {min_idle_pct: lots}\n") ==
        "cfg.yaml:3:32: rules.PTA101.thresholds.min_idle_pct: expected a number, got 'lots'");
  CHECK(parse_error("- a\n- b\n") == "cfg.yaml:1:1: expected a map of settings at the top level");
  CHECK(parse_error("select: [a\n").rfind("cfg.yaml:2:1: invalid YAML: ", 0) == 0);
}

TEST_CASE("find_config walks up from the working directory") {
  testing::TempDir dir;
  dir.write("project/.ptadvise.yaml", "fail-on: error\n");
  std::filesystem::create_directories(dir.file("project/a/b"));
  std::string found = find_config(dir.file("project/a/b"));
  CHECK(std::filesystem::equivalent(found, dir.file("project/.ptadvise.yaml")));
  CHECK(find_config(dir.path()) != dir.file("project/.ptadvise.yaml"));

  auto loaded = load_config(found);
  REQUIRE(std::holds_alternative<Config>(loaded));
  CHECK(std::get<Config>(loaded).fail_on == Severity::Error);
  auto missing = load_config(dir.file("nope.yaml"));
  REQUIRE(std::holds_alternative<ConfigError>(missing));
  CHECK(std::get<ConfigError>(missing).message == dir.file("nope.yaml") + ": cannot read the configuration file: No such file or directory");
}

TEST_CASE("print_config shows the effective configuration") {
  Config config = parse_ok("select: [PTA101]\nrules:\n  PTA101: {severity: error, thresholds: {min_idle_pct: 2}}\n");
  std::ostringstream out;
  print_config(config, out);
  CHECK(out.str() ==
        "# effective configuration from cfg.yaml\n"
        "select:\n"
        "  - PTA101\n"
        "extend-select: []\n"
        "ignore: []\n"
        "fail-on: warning\n"
        "rule-directories: []\n"
        "kernel-families: []\n"
        "source-root: .\n"
        "rules:\n"
        "  PTA101:\n"
        "    severity: error\n"
        "    thresholds:\n"
        "      min_idle_pct: 2\n");
}
