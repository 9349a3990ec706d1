// Rule files, configurations and baselines written to hurt: overflowing durations, non-numbers, alias
// bombs, endless files, looping directories, and glob patterns built to make matching quadratic.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "../../../rules/src/name_matcher.h"
#include "ptadvise/advisor.h"
#include "ptadvise/io.h"
#include "ptadvise/job.h"
#include "ptadvise/kernel_class.h"
#include "ptadvise/rules.h"

namespace {

const std::string kRule =
    "id: PTA901\n"
    "name: test-rule\n"
    "severity: warning\n"
    "tags: [sync]\n"
    "summary: A test rule.\n"
    "fix: Do not.\n"
    "docs: {what: w, why: y, example: e, fix: f}\n"
    "thresholds:\n"
    "  min_count: {value: 1, unit: per step, doc: why}\n"
    "select:\n"
    "  syncs: {kind: kernel, name: \"*\", min_dur: MIN_DUR}\n"
    "group: {by: [op]}\n"
    "when: count >= min_count\n"
    "message: \"{site.op} {count} per step\"\n"
    "saving: {ms_per_step: time_ms, method: own time}\n";

std::string rule_with(const std::string& min_dur) {
  std::string text = kRule;
  text.replace(text.find("MIN_DUR"), 7, min_dur);
  return text;
}

std::string rule_error(const std::string& text) {
  auto result = ptadvise::load_rule_text(text, "r.yaml");
  if (auto* error = std::get_if<ptadvise::RuleError>(&result)) return error->message;
  return "(no error)";
}

// {any: [c8]} where c(k) = {all: [c(k-1) x 10]}: 10^8 conditions once aliases are followed.
std::string condition_bomb(const std::string& condition) {
  std::string conditions = "&c0 {all: [" + condition + ", " + condition + "]}";
  for (int k = 1; k <= 8; ++k) {
    std::string items;
    for (int i = 0; i < 10; ++i) items += std::string(i ? ", " : "") + "*c" + std::to_string(k - 1);
    conditions += ", &c" + std::to_string(k) + " {all: [" + items + "]}";
  }
  return "{any: [" + conditions + "]}";
}

// A temporary directory, removed with everything in it.
struct ScratchDirectory {
  std::filesystem::path path;
  explicit ScratchDirectory(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("ptadvise_" + name + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDirectory() { std::filesystem::remove_all(path); }
};

// A job rule of the shipped set, without its fixtures.
std::string shipped_job_rule() {
  std::ifstream in(PTADVISE_SOURCE_DIR "/rules.d/job/ddp-broadcast-buffers.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.substr(0, text.find("\ntests:") + 1);
}

// The textbook recursive matcher, as the reference for the linear one.
bool reference_glob(std::string_view p, std::string_view t) {
  if (p.empty()) return t.empty();
  if (p[0] == '*') return reference_glob(p.substr(1), t) || (!t.empty() && reference_glob(p, t.substr(1)));
  return !t.empty() && (p[0] == '?' || p[0] == t[0]) && reference_glob(p.substr(1), t.substr(1));
}

}  // namespace

TEST_CASE("hostile rules: durations that overflow int64 nanoseconds are errors, not negative bounds") {
  CHECK(rule_error(rule_with("10us")) == "(no error)");
  CHECK(rule_error(rule_with("1e10 s")) ==
        "r.yaml:11:45: select.syncs.min_dur: duration out of range (at most 4.6e9 s), got '1e10 s'");
  CHECK(rule_error(rule_with("1e300 s")).find("expected a duration with a unit") != std::string::npos);
  CHECK(rule_error(rule_with("nan s")).find("expected a duration with a unit") != std::string::npos);
  CHECK(rule_error(rule_with("inf ms")).find("expected a duration with a unit") != std::string::npos);
}

TEST_CASE("hostile rules: a scale factor that would overflow the replay's nanoseconds is an error") {
  std::string text = rule_with("1us");
  text += "transform:\n  apply:\n    - scale: {factor: FACTOR}\n  method: m\n";
  auto with_factor = [&](const std::string& factor) {
    std::string rule = text;
    rule.replace(rule.find("FACTOR"), 6, factor);
    return rule_error(rule);
  };
  CHECK(with_factor("0.5") == "(no error)");
  CHECK(with_factor("1000") == "(no error)");
  CHECK(with_factor("1e300").find("expected a number from 0 to 1000, got '1e300'") != std::string::npos);
  CHECK(with_factor("-1").find("expected a number from 0 to 1000") != std::string::npos);
}

TEST_CASE("hostile rules: a YAML alias bomb is refused, not expanded") {
  std::string text = kRule;
  text.replace(text.find("when: count >= min_count"), 24, "when: " + condition_bomb("count >= 1"));
  text.replace(text.find("MIN_DUR"), 7, "1us");
  CHECK(rule_error(text).find("r.yaml: yaml: the document expands to more than 1,000,000 nodes") == 0);

  std::string config = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int k = 1; k <= 8; ++k) {
    config += "a" + std::to_string(k) + ": &a" + std::to_string(k) + " [";
    for (int i = 0; i < 10; ++i) config += std::string(i ? ", " : "") + "*a" + std::to_string(k - 1);
    config += "]\n";
  }
  auto parsed = ptadvise::parse_config(config, "c.yaml", ".");
  REQUIRE(std::holds_alternative<ptadvise::ConfigError>(parsed));
  CHECK(std::get<ptadvise::ConfigError>(parsed).message.find("c.yaml: the document expands") == 0);
  auto baseline = ptadvise::parse_baseline(config, "b.yaml");
  REQUIRE(std::holds_alternative<ptadvise::ConfigError>(baseline));
  CHECK(std::get<ptadvise::ConfigError>(baseline).message.find("b.yaml: the document expands") == 0);
}

TEST_CASE("hostile config: a NaN or infinite threshold is an error, not a disabled rule") {
  for (const char* value : {"nan", "NaN", "inf", "-inf"}) {
    CAPTURE(value);
    auto parsed = ptadvise::parse_config(std::string("rules:\n  PTA101:\n    thresholds: {min_ms: ") + value + "}\n",
                                         "c.yaml", ".");
    REQUIRE(std::holds_alternative<ptadvise::ConfigError>(parsed));
    CHECK(std::get<ptadvise::ConfigError>(parsed).message.find("expected a number") != std::string::npos);
  }
}

TEST_CASE("hostile files: /dev/zero as config or baseline ends with an error, not a read forever") {
  auto config = ptadvise::load_config("/dev/zero");
  REQUIRE(std::holds_alternative<ptadvise::ConfigError>(config));
  CHECK(std::get<ptadvise::ConfigError>(config).message ==
        "/dev/zero: cannot read the configuration file: larger than 16 MiB: not a file of this kind");
  auto baseline = ptadvise::load_baseline("/dev/zero");
  REQUIRE(std::holds_alternative<ptadvise::ConfigError>(baseline));
  CHECK(std::get<ptadvise::ConfigError>(baseline).message.find("larger than 16 MiB") != std::string::npos);
}

TEST_CASE("hostile rules: rule directories with looping symlinks are walked once, by both rule loaders") {
  namespace fs = std::filesystem;
  ScratchDirectory scratch("loop_rules");
  const fs::path& root = scratch.path;
  fs::create_directories(root / "a" / "b");
  std::ofstream(root / "a" / "r.yaml") << rule_with("1us");
  std::ofstream(root / "a" / "b" / "job.yaml") << shipped_job_rule();
  fs::create_directory_symlink(root, root / "a" / "b" / "up");       // back to the top
  fs::create_directory_symlink(root / "a", root / "a" / "b" / "again");  // and to a sibling branch
  auto loaded = ptadvise::load_rules({root.string()});
  REQUIRE(std::holds_alternative<ptadvise::RuleSet>(loaded));
  CHECK(std::get<ptadvise::RuleSet>(loaded).infos().size() == 1);
  // `check` loads the job rules of the same directories first (2^40 paths through the two links).
  auto job_rules = ptadvise::load_job_rules({root.string()});
  REQUIRE(std::holds_alternative<ptadvise::JobRuleSet>(job_rules));
  CHECK(std::get<ptadvise::JobRuleSet>(job_rules).infos().size() == 1);
}

TEST_CASE("hostile rules: job rule files are read with a bound and alias bombs in them are refused") {
  ScratchDirectory scratch("job_rules");
  std::string text = shipped_job_rule();
  const size_t when = text.find("when:");
  const size_t message = text.find("message:");
  REQUIRE(when < message);
  text.replace(when, message - when, "when: " + condition_bomb("broadcast_transfer_pct >= 1") + "\n\n");
  std::ofstream(scratch.path / "bomb.yaml") << text;
  auto bomb = ptadvise::load_job_rules({scratch.path.string()});
  REQUIRE(std::holds_alternative<ptadvise::JobRuleError>(bomb));
  CHECK(std::get<ptadvise::JobRuleError>(bomb).message.find((scratch.path / "bomb.yaml").string() +
                                                            ": yaml: the document expands to more than 1,000,000 nodes") == 0);

  std::filesystem::remove(scratch.path / "bomb.yaml");
  std::filesystem::create_symlink("/dev/zero", scratch.path / "zero.yaml");  // not a regular file: skipped
  std::ofstream(scratch.path / "big.yaml") << "scope: job\n" << std::string(ptadvise::kMaxSmallFileBytes, '#');
  auto big = ptadvise::load_job_rules({scratch.path.string()});
  REQUIRE(std::holds_alternative<ptadvise::JobRuleError>(big));
  CHECK(std::get<ptadvise::JobRuleError>(big).message ==
        (scratch.path / "big.yaml").string() + ":"
        " cannot read the rule file: larger than 16 MiB: not a file of this kind");
}

TEST_CASE("hostile files: kernel family tables and digests are read with a bound; alias bombs in tables refused") {
  auto zero_table = ptadvise::KernelClassifier::load("/dev/zero");
  REQUIRE(std::holds_alternative<ptadvise::KernelTableError>(zero_table));
  CHECK(std::get<ptadvise::KernelTableError>(zero_table).message ==
        "/dev/zero: cannot read the kernel family table: larger than 16 MiB: not a file of this kind");
  std::string table = "version: 1\nrules:\n  - &r0 {family: gemm, names: [\"*gemm*\"]}\n";
  for (int k = 1; k <= 8; ++k) {
    table += "  - &r" + std::to_string(k) + " [";
    for (int i = 0; i < 10; ++i) table += std::string(i ? ", " : "") + "*r" + std::to_string(k - 1);
    table += "]\n";
  }
  auto bomb = ptadvise::KernelClassifier::parse(table, "families.yaml");
  REQUIRE(std::holds_alternative<ptadvise::KernelTableError>(bomb));
  CHECK(std::get<ptadvise::KernelTableError>(bomb).message.find(
            "families.yaml: yaml: the document expands to more than 1,000,000 nodes") == 0);

  auto digest = ptadvise::read_digest("/dev/zero");
  REQUIRE(std::holds_alternative<ptadvise::DigestError>(digest));
  CHECK(std::get<ptadvise::DigestError>(digest).message ==
        "/dev/zero: cannot read the digest: larger than 256 MiB: not a file of this kind");
}

TEST_CASE("hostile globs: the linear matcher agrees with the textbook definition") {
  std::mt19937 random(7);
  const std::string alphabet = "ab*?";
  for (int round = 0; round < 20000; ++round) {
    std::string pattern, text;
    for (size_t i = random() % 8; i > 0; --i) pattern += alphabet[random() % alphabet.size()];
    for (size_t i = random() % 10; i > 0; --i) text += "ab"[random() % 2];
    CAPTURE(pattern);
    CAPTURE(text);
    REQUIRE(ptadvise::glob_match(pattern, text) == reference_glob(pattern, text));
  }
}

TEST_CASE("hostile globs: a 20 KB pattern against long names stays linear (seconds of work when quadratic)") {
  // '*a' 10,000 times then 'b': the old backtracking matcher retried every star at every position.
  std::string pattern;
  for (int i = 0; i < 10000; ++i) pattern += "*a";
  pattern += "b";
  std::string name(20000, 'a');
  size_t matched = 0;
  for (int i = 0; i < 200; ++i) {
    name[static_cast<size_t>(i)] = 'c';  // distinct names
    matched += ptadvise::glob_match(pattern, name) ? 1 : 0;
  }
  CHECK(matched == 0);
  CHECK(ptadvise::glob_match(pattern, name + "b"));
}
