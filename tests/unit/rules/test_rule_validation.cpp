// Validation of rule files: every mistake is one line naming file, line, column and key.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ptadvise/rules.h"

namespace {

using ptadvise::RuleError;
using ptadvise::RuleSet;

// A minimal valid rule; tests replace one line to break it.
const std::string kValid =
    "id: PTA901\n"                                        // 1
    "name: test-rule\n"                                   // 2
    "severity: warning\n"                                 // 3
    "tags: [sync]\n"                                      // 4
    "summary: A test rule.\n"                             // 5
    "fix: Do not.\n"                                      // 6
    "docs: {what: w, why: y, example: e, fix: f}\n"       // 7
    "thresholds:\n"                                       // 8
    "  min_count: {value: 1, unit: per step, doc: why}\n" // 9
    "select:\n"                                           // 10
    "  syncs: {kind: cpu_op, name: \"aten::item\"}\n"     // 11
    "group: {by: [op]}\n"                                 // 12
    "when: count >= min_count\n"                          // 13
    "message: \"{site.op} {count} per step\"\n"           // 14
    "saving: {ms_per_step: time_ms, method: own time}\n"; // 15

std::string replace_line(const std::string& text, int line, const std::string& replacement) {
  size_t start = 0;
  for (int i = 1; i < line; ++i) start = text.find('\n', start) + 1;
  size_t end = text.find('\n', start);
  return text.substr(0, start) + replacement + text.substr(end);
}

std::string error_of(const std::string& text) {
  auto result = ptadvise::load_rule_text(text, "r.yaml");
  if (auto* error = std::get_if<RuleError>(&result)) return error->message;
  return "(no error)";
}

}  // namespace

TEST_CASE("a valid rule loads with its metadata and thresholds") {
  auto result = ptadvise::load_rule_text(kValid, "r.yaml");
  REQUIRE(std::holds_alternative<RuleSet>(result));
  const auto& set = std::get<RuleSet>(result);
  REQUIRE(set.infos().size() == 1);
  const auto& info = set.infos()[0];
  CHECK(info.id == "PTA901");
  CHECK(info.name == "test-rule");
  CHECK(info.severity == ptadvise::Severity::Warning);
  CHECK(info.tags == std::vector<std::string>{"sync"});
  CHECK(info.docs.what == "w");
  REQUIRE(info.thresholds.size() == 3);
  CHECK(info.thresholds[0].name == "min_count");
  CHECK(info.thresholds[0].value == 1);
  // Every rule gets the noise floor unless it sets its own.
  CHECK(info.thresholds[1].name == "min_saving_ms");
  CHECK(info.thresholds[1].value == 0.01);
  CHECK(info.thresholds[2].name == "min_saving_pct");
  CHECK(info.thresholds[2].value == 0.5);
  CHECK(info.saving_method == "own time");
  CHECK(set.find("pta901") == &info);
  CHECK(set.find("TEST-RULE") == &info);
  CHECK(set.find("nope") == nullptr);
  CHECK(set.closest("test-rul") == "test-rule");
}

TEST_CASE("unknown keys are errors naming line, column and key") {
  CHECK(error_of(replace_line(kValid, 6, "fix: Do not.\nfixes: x")) ==
        "r.yaml:7:1: fixes: unknown key; expected one of id, name, severity, tags, summary, fix, docs, order, "
        "thresholds, select, group, metrics, when, message, short_message, short_fix, saving, tests, transform");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {kind: cpu_op, nam: x}")) ==
        "r.yaml:11:25: select.syncs.nam: unknown key; expected one of kind, name, exclude_name, family, "
        "exclude_family, inside, not_inside, min_dur, max_dur, in_step, after_first_step, in_warmup, waits_for_gpu, "
        "charged_idle, args, followed_by, not_followed_by, preceded_by, not_preceded_by, contains, not_contains, union");
}

TEST_CASE("kernel family selectors: known families, kernels only") {
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {kind: kernel, family: tensor}")) ==
        "r.yaml:11:33: select.syncs.family: unknown kernel family 'tensor'; expected one of matmul-tensor-core, "
        "matmul-simt, communication, copy, elementwise, reduction, other");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {kind: runtime, exclude_family: [communication]}")) ==
        "r.yaml:11:17: select.syncs.kind: a selection by kernel family selects kernels; expected `kind: kernel`");
}

TEST_CASE("missing required keys and docs sections are errors") {
  CHECK(error_of(replace_line(kValid, 5, "")) == "r.yaml:1:1: summary: missing required key");
  CHECK(error_of(replace_line(kValid, 7, "docs: {what: w, why: y, example: e}")) ==
        "r.yaml:7:7: docs.fix: missing required section");
  CHECK(error_of(replace_line(kValid, 7, "docs: {what: w, why: y, example: '  ', fix: f}")) ==
        "r.yaml:7:34: docs.example: expected a non-empty string");
}

TEST_CASE("wrong types and values are errors") {
  CHECK(error_of(replace_line(kValid, 3, "severity: fatal")) ==
        "r.yaml:3:11: severity: expected info, warning or error, got 'fatal'");
  CHECK(error_of(replace_line(kValid, 3, "severity: \"bad\\nvalue\"")) ==
        "r.yaml:3:11: severity: expected info, warning or error, got 'bad\\nvalue'");
  CHECK(error_of(replace_line(kValid, 4, "tags: sync")) == "r.yaml:4:7: tags: expected a non-empty list of tags");
  CHECK(error_of(replace_line(kValid, 1, "id: [PTA1]")) == "r.yaml:1:5: id: expected a string");
  CHECK(error_of(replace_line(kValid, 1, "id: pta1")) == "r.yaml:1:5: id: expected upper-case letters then digits, like PTA101");
  CHECK(error_of(replace_line(kValid, 2, "name: Test_Rule")) ==
        "r.yaml:2:7: name: expected lower-case words joined by '-', like sync-in-step");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {kind: cpu, name: x}")) ==
        "r.yaml:11:17: select.syncs.kind: unknown event kind 'cpu'; expected one of collective, cpu_op, driver, "
        "gpu_annotation, instant, kernel, memcpy, memory, memset, other, python_function, runtime, sync, "
        "user_annotation");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {kind: cpu_op, min_dur: 10}")) ==
        "r.yaml:11:34: select.syncs.min_dur: expected a duration with a unit (ns, us, ms, s), got '10'");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {kind: cpu_op, in_step: yes}")) ==
        "r.yaml:11:34: select.syncs.in_step: expected true or false, got 'yes'");
  CHECK(error_of(replace_line(kValid, 9, "  min_count: {value: one, doc: why}")) ==
        "r.yaml:9:22: thresholds.min_count.value: expected a number, got 'one'");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {args: [{key: bytes, ge: lots}]}")) ==
        "r.yaml:11:35: select.syncs.args.ge: expected a number (units B, KiB, MiB, GiB, KB, MB, GB allowed), got 'lots'");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {args: [{key: bytes, ge: 1, le: 2}]}")) ==
        "r.yaml:11:18: select.syncs.args: expected exactly one comparison (exists, eq, ge, contains, ...)");
}

TEST_CASE("a bad regular expression is an error quoting RE2") {
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {name: {regex: \"aten::(item\"}}")) ==
        "r.yaml:11:25: select.syncs.name.regex: invalid regular expression 'aten::(item': missing ): aten::(item");
}

TEST_CASE("references to unknown names are errors") {
  CHECK(error_of(replace_line(kValid, 13, "when: count >= min_cnt")) ==
        "r.yaml:13:7: when: unknown name 'min_cnt' (not a metric, threshold, built-in value or number)");
  CHECK(error_of(replace_line(kValid, 13, "when: count => 1")) ==
        "r.yaml:13:7: when: expected 'NAME OP VALUE' with OP one of < <= > >= == !=, got 'count => 1'");
  CHECK(error_of(replace_line(kValid, 14, "message: \"{site.opp}\"")) ==
        "r.yaml:14:10: message: unknown placeholder {site.opp}; expected a metric, threshold or built-in name, "
        "site.op, site.kernel, site.name, site.source, site.op_chain, idle_causes or idle_culprits");
  CHECK(error_of(replace_line(kValid, 12, "group: {by: [opp]}")) ==
        "r.yaml:12:14: group.by: unknown site key 'opp'; expected op, op_chain, kernel, name, source or bytes");
  CHECK(error_of(replace_line(kValid, 11, "  syncs: {followed_by: {select: other, within: 1us}}")) ==
        "r.yaml:11:33: select.syncs.followed_by.select: unknown selection 'other'");
  CHECK(error_of(replace_line(kValid, 15, "saving: {ms_per_step: idle, method: m}")) ==
        "r.yaml:15:23: saving.ms_per_step: unknown metric 'idle'");
  CHECK(error_of(replace_line(kValid, 12, "group: {by: [op]}\nmetrics: {a: {ratio: [b, count]}, b: {sum: [a, count]}}")) ==
        "r.yaml:13:11: metrics.a: metrics refer to each other in a cycle");
  CHECK(error_of(replace_line(kValid, 12, "group: {by: [op]}\nmetrics: {min_count: {count: syncs}}")) ==
        "r.yaml:13:11: metrics.min_count: 'min_count' is already defined (metric, threshold and built-in names share "
        "one namespace)");
}

TEST_CASE("YAML syntax errors carry the position") {
  CHECK(error_of("id: [PTA1\n") == "r.yaml:2:1: yaml: end of sequence flow not found");
  CHECK(error_of("- a\n- b\n") ==
        "r.yaml:1:1: rule: expected a mapping with id, name, severity, ... (see docs/RULE_LANGUAGE.md)");
}

TEST_CASE("duplicate ids and names across files are errors") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "ptadvise-rule-dup-test";
  fs::remove_all(dir);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  auto write = [](const fs::path& path, const std::string& text) { std::ofstream(path) << text; };
  write(dir / "a" / "one.yaml", kValid);
  write(dir / "b" / "two.yaml", replace_line(kValid, 2, "name: other-rule"));
  auto result = ptadvise::load_rules({dir.string()});
  REQUIRE(std::holds_alternative<RuleError>(result));
  const std::string duplicate_id =
      (dir / "b" / "two.yaml").string() + ":1:5: id: duplicate id PTA901 (also in " + (dir / "a" / "one.yaml").string() + ")";
  CHECK(std::get<RuleError>(result).message == duplicate_id);
  // Loaded again, both files come from the process's cache of compiled files: the same error, same position.
  result = ptadvise::load_rules({dir.string()});
  REQUIRE(std::holds_alternative<RuleError>(result));
  CHECK(std::get<RuleError>(result).message == duplicate_id);
  // A file rewritten under the same path is compiled again.
  write(dir / "b" / "two.yaml", replace_line(kValid, 1, "id: PTA902"));
  result = ptadvise::load_rules({dir.string()});
  REQUIRE(std::holds_alternative<RuleError>(result));
  CHECK(std::get<RuleError>(result).message ==
        (dir / "b" / "two.yaml").string() + ":2:7: name: duplicate name test-rule (also in " + (dir / "a" / "one.yaml").string() + ")");
  write(dir / "b" / "two.yaml", replace_line(replace_line(kValid, 1, "id: PTA902"), 2, "name: other-rule"));
  result = ptadvise::load_rules({dir.string()});
  REQUIRE(std::holds_alternative<RuleSet>(result));
  CHECK(std::get<RuleSet>(result).infos().size() == 2);
  CHECK(std::get<RuleSet>(result).find("other-rule")->id == "PTA902");
  write(dir / "b" / "two.yaml", replace_line(replace_line(kValid, 1, "id: PTA903"), 2, "name: third-rule"));
  result = ptadvise::load_rules({dir.string()});
  REQUIRE(std::holds_alternative<RuleSet>(result));
  CHECK(std::get<RuleSet>(result).find("other-rule") == nullptr);
  CHECK(std::get<RuleSet>(result).find("third-rule")->id == "PTA903");
  CHECK(std::holds_alternative<RuleError>(ptadvise::load_rules({(dir / "missing").string()})));
  fs::remove_all(dir);
}

TEST_CASE("short_message and short_fix: the default text report's forms, checked like the rest") {
  auto result = ptadvise::load_rule_text(
      replace_line(replace_line(kValid, 14, "message: \"{site.op} {count} per step\"\nshort_message: \"{count} per step\""), 6,
                   "fix: Do not.\nshort_fix: Stop."),
      "r.yaml");
  REQUIRE(std::holds_alternative<RuleSet>(result));
  CHECK(std::get<RuleSet>(result).infos()[0].short_fix == "Stop.");
  CHECK(error_of(replace_line(kValid, 14, "message: x\nshort_message: \"{nope}\"")) ==
        "r.yaml:15:16: short_message: unknown placeholder {nope}; expected a metric, threshold or built-in name, "
        "site.op, site.kernel, site.name, site.source, site.op_chain, idle_causes or idle_culprits");
  CHECK(error_of(replace_line(kValid, 6, "fix: Do not.\nshort_fix: " + std::string(67, 'x'))) ==
        "r.yaml:7:12: short_fix: expected at most 66 characters (it is one line of the text report), got 67");
}

TEST_CASE("every shipped rule has a short_message and a short_fix") {
  size_t rules = 0;
  for (const char* directory : {"/rules.d", "/rules.d/job"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(PTADVISE_SOURCE_DIR) + directory)) {
      if (entry.path().extension() != ".yaml" || entry.path().parent_path().extension() == ".tests") continue;
      if (std::string(directory) == "/rules.d" && entry.path().parent_path().filename() == "job") continue;
      std::ifstream in(entry.path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("\nid: ") == std::string::npos && text.rfind("id: ", 0) != 0) continue;
      CAPTURE(entry.path().string());
      ++rules;
      CHECK(text.find("\nshort_message: ") != std::string::npos);
      CHECK(text.find("\nshort_fix: ") != std::string::npos);
    }
  }
  CHECK(rules == 27);
}
