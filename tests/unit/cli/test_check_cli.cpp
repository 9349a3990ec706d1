// `ptadvise check` and `ptadvise diff` end to end, through the built binary, on the scenario traces.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../advisor/python_check.h"
#include "../advisor/temp_dir.h"
#include "cli_run.h"
#include "corpus_traces.h"
#include "trace_builder.h"

namespace {

using ptadvise::testing::read_file;
using ptadvise::testing::TempDir;

using ptadvise::testing::ptadvise_cli;
using ptadvise::testing::Run;

std::string scenario_path(const std::string& name) {
  return PTADVISE_SOURCE_DIR "/testdata/scenarios/" + name + ".json.gz";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A rule of our own, so these tests follow the advisor and not the tuning of the shipped rules.
const char* kTestRule = R"(id: PTX901
name: scalar-read-in-step
severity: warning
tags: [test-sync]
summary: Reads a GPU scalar on the host inside the step.
fix: Keep the value on the device.
docs:
  what: Finds aten::_local_scalar_dense inside steps.
  why: The host waits for the GPU.
  example: x.item()
  fix: x.detach()
select:
  scalar_reads:
    kind: cpu_op
    name: "aten::_local_scalar_dense"
    in_step: true
group: {select: scalar_reads, by: [op, source]}
message: "{site.op} reads a GPU value {count} times per step at {site.source}"
saving:
  ms_per_step: time_ms
  method: the op's host time per step
  confidence: low
)";

// `check` with the test rule only; the rule directory lives in `dir`.
std::string check(const TempDir& dir) {
  dir.write("test-rules/scalar-read-in-step.yaml", kTestRule);
  return "check --rules '" + dir.file("test-rules") + "' --select PTX901 ";
}

const std::string kSync = scenario_path("02_assert_on_gpu_tensor");
const std::string kSyncFixed = scenario_path("02_assert_on_gpu_tensor_fixed");

}  // namespace

TEST_CASE("check: exit codes for findings, --exit-zero, --fail-on and clean traces") {
  TempDir dir;
  Run found = ptadvise_cli(check(dir) + "'" + kSync + "'", dir.path());
  CHECK(found.exit_code == 1);
  CHECK(found.out.find("warning[PTX901] scalar-read-in-step") != std::string::npos);
  CHECK(found.out.find("  --> train.py:18 in forward") != std::string::npos);
  CHECK(found.out.find("   = help: ") != std::string::npos);
  CHECK(found.out.find("scalar-read-in-step: saves ~") != std::string::npos);
  CHECK(found.out.find('\x1b') == std::string::npos);  // not a terminal: no colour
  // FORCE_COLOR / CLICOLOR_FORCE turn colour on without a terminal; NO_COLOR and --color never win.
  CHECK(ptadvise_cli(check(dir) + "'" + kSync + "'", dir.path(), "FORCE_COLOR=1").out.find('\x1b') != std::string::npos);
  CHECK(ptadvise_cli(check(dir) + "'" + kSync + "'", dir.path(), "CLICOLOR_FORCE=1").out.find('\x1b') != std::string::npos);
  CHECK(ptadvise_cli(check(dir) + "'" + kSync + "'", dir.path(), "FORCE_COLOR=1 NO_COLOR=1").out.find('\x1b') ==
        std::string::npos);
  CHECK(ptadvise_cli(check(dir) + "--color never '" + kSync + "'", dir.path(), "FORCE_COLOR=1").out.find('\x1b') ==
        std::string::npos);
  // Not a terminal: 80 columns, or $COLUMNS.
  for (const auto& [env, width] : {std::pair<std::string, size_t>{"", 80}, {"COLUMNS=50", 50}}) {
    Run wrapped = ptadvise_cli(check(dir) + "'" + kSync + "'", dir.path(), env);
    std::istringstream lines(wrapped.out);
    for (std::string line; std::getline(lines, line);) CHECK(ptadvise::testing::columns(line) <= width);
  }
  Run concise = ptadvise_cli(check(dir) + "--concise '" + kSync + "'", dir.path());
  CHECK(concise.out.rfind("train.py:18: warning[PTX901] scalar-read-in-step: ", 0) == 0);
  CHECK(count(concise.out, "\n") == 3);  // the finding, a blank line, the total

  CHECK(ptadvise_cli(check(dir) + "--exit-zero '" + kSync + "'", dir.path()).exit_code == 0);
  CHECK(ptadvise_cli(check(dir) + "--fail-on error '" + kSync + "'", dir.path()).exit_code == 0);
  Run fixed = ptadvise_cli(check(dir) + "'" + kSyncFixed + "'", dir.path());
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.out.find("No findings.") != std::string::npos);
  Run colour = ptadvise_cli(check(dir) + "--color always '" + kSync + "'", dir.path());
  CHECK(colour.out.find("\x1b[1m\x1b[33mwarning\x1b[0m") != std::string::npos);
}

TEST_CASE("check: input and usage errors exit 2 with one line") {
  TempDir dir;
  Run missing = ptadvise_cli("check '" + dir.file("nope.json") + "'", dir.path());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.rfind("ptadvise: error: ", 0) == 0);
  CHECK(count(missing.err, "\n") == 1);

  Run format = ptadvise_cli("check --format xml '" + kSync + "'", dir.path());
  CHECK(format.exit_code == 2);
  CHECK(format.err ==
        "ptadvise: error: --format: unknown format 'xml' (expected text, json, sarif, github, junit, markdown or html)\n");
  CHECK(ptadvise_cli("check --output sarif '" + kSync + "'", dir.path()).exit_code == 2);
  Run fail_on = ptadvise_cli("check --fail-on loud '" + kSync + "'", dir.path());
  CHECK(fail_on.exit_code == 2);
  CHECK(fail_on.err == "ptadvise: error: --fail-on: expected info, warning or error, got 'loud'\n");
  Run select = ptadvise_cli("check --select PTA999 '" + kSync + "'", dir.path());
  CHECK(select.exit_code == 2);
  CHECK(select.err.rfind("ptadvise: error: command line: select: 'PTA999' is not a rule id, name or tag", 0) == 0);
  CHECK(count(select.err, "\n") == 1);
  CHECK(ptadvise_cli("check --no-such-flag '" + kSync + "'", dir.path()).exit_code == 2);
  // Usage errors name the problem and the nearest command or option.
  Run typo = ptadvise_cli("chekc '" + kSync + "'", dir.path());
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.rfind("ptadvise: error: unknown command 'chekc' (did you mean `check`?)\n", 0) == 0);
  Run option = ptadvise_cli("check --formt json '" + kSync + "'", dir.path());
  CHECK(option.exit_code == 2);
  CHECK(option.err.rfind("ptadvise: error: unknown option '--formt' for `check` (did you mean `--format`?)\n", 0) == 0);
  Run far = ptadvise_cli("frobnicate", dir.path());
  CHECK(far.err.rfind("ptadvise: error: unknown command 'frobnicate'\n", 0) == 0);
  // A bad --output path says why, in the OS's words.
  Run unwritable = ptadvise_cli(check(dir) + "--output json=no/such/dir/out.json '" + kSync + "'", dir.path());
  CHECK(unwritable.exit_code == 2);
  CHECK(unwritable.err.find("no/such/dir/out.json: cannot write the json report: cannot create a temporary file in "
                            "no/such/dir: No such file or directory") != std::string::npos);

  dir.write("bad.yaml", "select: [PTX901]\nfail-on: sometimes\n");
  Run config = ptadvise_cli("check --config bad.yaml '" + kSync + "'", dir.path());
  CHECK(config.exit_code == 2);
  CHECK(config.err == "ptadvise: error: bad.yaml:2:10: fail-on: expected info, warning or error, got 'sometimes'\n");
}

TEST_CASE("check: .ptadvise.yaml is found upward and --show-config prints it") {
  TempDir dir;
  check(dir);  // writes the test rule
  dir.write(".ptadvise.yaml", "select: [PTX901]\nfail-on: error\nrule-directories: [test-rules]\n");
  std::filesystem::create_directories(dir.file("sub/dir"));
  Run run = ptadvise_cli("check '" + kSync + "'", dir.file("sub/dir"));
  CHECK(run.exit_code == 0);  // the finding is a warning, the configuration fails only on errors
  CHECK(run.out.find("[PTX901]") != std::string::npos);

  Run show = ptadvise_cli("check --show-config --ignore tiny-kernel-storm", dir.file("sub/dir"));
  CHECK(show.exit_code == 0);
  CHECK(show.out.find("select:\n  - PTX901\n") != std::string::npos);
  CHECK(show.out.find("ignore:\n  - tiny-kernel-storm\n") != std::string::npos);
  CHECK(show.out.find("fail-on: error\n") != std::string::npos);

  dir.write("sub/.ptadvise.yaml", "ignore: [scalar-read-in-step]\nrule-directories: [../test-rules]\n");
  Run nearer = ptadvise_cli("check '" + kSync + "'", dir.file("sub/dir"));
  CHECK(nearer.err.find("error") == std::string::npos);
  CHECK(nearer.out.find("[PTX901]") == std::string::npos);
}

TEST_CASE("check: kernel family tables from --kernel-families and the configuration") {
  TempDir dir;
  // The tiny-kernel storm fixture; a table calling every kernel communication leaves no storm to report.
  const std::string storm = PTADVISE_SOURCE_DIR "/rules.d/tiny-kernels/tiny-kernel-storm.tests/fire.json.gz";
  Run shipped = ptadvise_cli("check --select tiny-kernel-storm '" + storm + "'", dir.path(), "COLUMNS=200");
  CHECK(shipped.exit_code == 1);
  CHECK(shipped.out.find("[PTA103]") != std::string::npos);
  // The header splits the busy share: a waiting GPU is not a busy one.
  CHECK(shipped.out.find("GPU busy 32.2%: compute 28.1%, communication 0.0%, copies 4.2%\n") != std::string::npos);
  dir.write("all-communication.yaml", "rules:\n  - family: communication\n    glob: '*'\n");
  Run user = ptadvise_cli("check --select tiny-kernel-storm --kernel-families all-communication.yaml '" + storm + "'",
                          dir.path(), "COLUMNS=200");
  CHECK(user.exit_code == 0);
  CHECK(user.out.find("[PTA103]") == std::string::npos);
  CHECK(user.out.find("GPU busy 32.2%: compute 0.0%, communication 28.1%, copies 4.2%\n") != std::string::npos);
  Run json = ptadvise_cli("check --format json --kernel-families all-communication.yaml '" + storm + "'", dir.path());
  const auto shares = nlohmann::json::parse(json.out)["traces"][0];
  CHECK(shares["compute_busy_pct"] == 0);
  CHECK(shares["communication_pct"] == 28.08);
  CHECK(shares["copy_pct"] == 4.16);
  dir.write(".ptadvise.yaml", "kernel-families: [all-communication.yaml]\n");
  Run configured = ptadvise_cli("check --select tiny-kernel-storm '" + storm + "'", dir.path());
  CHECK(configured.exit_code == 0);
  dir.write("bad.yaml", "rules:\n  - family: comm\n    glob: '*'\n");
  Run bad = ptadvise_cli("check --kernel-families bad.yaml '" + storm + "'", dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "ptadvise: error: bad.yaml:2:13: rules[0].family: unknown family 'comm'; expected one of "
                   "matmul-tensor-core, matmul-simt, communication, copy, elementwise, reduction, other\n");
}

TEST_CASE("check: inline suppression on the source line the finding points to") {
  TempDir dir;
  std::string source;
  for (int line = 1; line <= 30; ++line) {
    source += line == 18 ? "    def forward(self, logits, target):  # ptadvise: ignore[scalar-read-in-step]\n" : "\n";
  }
  dir.write("train.py", source);
  Run run = ptadvise_cli(check(dir) + "'" + kSync + "'", dir.path());
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("1 suppressed by `# ptadvise: ignore` comments") != std::string::npos);
  TempDir elsewhere;
  Run other_root = ptadvise_cli(check(dir) + "--source-root '" + elsewhere.path() + "' '" + kSync + "'", dir.path());
  CHECK(other_root.exit_code == 1);
}

TEST_CASE("check: baseline write, use, stale entries and prune") {
  TempDir dir;
  Run write = ptadvise_cli(check(dir) + "--write-baseline base.yaml '" + kSync + "'", dir.path());
  CHECK(write.exit_code == 0);
  std::string baseline = read_file(dir.file("base.yaml"));
  CHECK(baseline.find("    rule: \"PTX901\"\n") != std::string::npos);

  Run with = ptadvise_cli(check(dir) + "--baseline base.yaml '" + kSync + "'", dir.path(), "COLUMNS=1000");
  CHECK(with.exit_code == 0);
  // Accepted findings are counted, not printed.
  CHECK(with.out.find("warning[PTX901]") == std::string::npos);
  CHECK(with.out.find("1 accepted in the baseline, not shown.") != std::string::npos);

  // The fixed program: the accepted finding is gone, so its entry is stale.
  Run stale = ptadvise_cli(check(dir) + "--baseline base.yaml '" + kSyncFixed + "'", dir.path());
  CHECK(stale.exit_code == 0);
  CHECK(stale.out.find("no longer occur") != std::string::npos);
  Run prune = ptadvise_cli(check(dir) + "--baseline base.yaml --prune-baseline '" + kSyncFixed + "'", dir.path());
  CHECK(prune.exit_code == 0);
  CHECK(read_file(dir.file("base.yaml")).find("findings: []\n") != std::string::npos);

  // A new finding fails against the (now empty) baseline.
  CHECK(ptadvise_cli(check(dir) + "--baseline base.yaml '" + kSync + "'", dir.path()).exit_code == 1);
  dir.write("broken.yaml", "version: 1\nfindings:\n  - rule: PTA102\n");
  Run broken = ptadvise_cli("check --baseline broken.yaml '" + kSync + "'", dir.path());
  CHECK(broken.exit_code == 2);
  CHECK(broken.err == "ptadvise: error: broken.yaml:3:5: entry without 'fingerprint'\n");
}

TEST_CASE("check: several outputs in one run; SARIF validates; github summary") {
  TempDir dir;
  Run run = ptadvise_cli(check(dir) + "--format json --output sarif=out.sarif --output junit=out.xml "
                         "--output github=gh.txt --output markdown=out.md '" + kSync + "'",
                         dir.path(), "GITHUB_STEP_SUMMARY=" + dir.file("summary.md"));
  CHECK(run.exit_code == 1);
  const auto json = nlohmann::json::parse(run.out);
  CHECK(json["traces"][0]["findings"][0]["rule_id"] == "PTX901");
  CHECK(json["traces"][0]["findings"][0]["source"] ==
        nlohmann::json{{"file", "train.py"}, {"line", 18}, {"function", "forward"}});
  CHECK(read_file(dir.file("out.xml")).find("<testcase classname=\"ptadvise.PTX901\"") != std::string::npos);
  CHECK(read_file(dir.file("gh.txt")).rfind("::warning file=train.py,line=18,title=PTX901 scalar-read-in-step", 0) == 0);
  CHECK(read_file(dir.file("out.md")).find("# ptadvise report") == 0);
  CHECK(read_file(dir.file("summary.md")) == read_file(dir.file("out.md")));

  const std::string schema = PTADVISE_SHARED_DIR "/schemas/sarif-schema-2.1.0.json";
  if (!std::filesystem::exists(schema) || !ptadvise::testing::python_has("jsonschema")) {
    MESSAGE("skipping SARIF schema validation: schema or Debian's python3-jsonschema missing");
    return;
  }
  CHECK(ptadvise::testing::run_python("import json,jsonschema,sys; d=json.load(open(sys.argv[1])); "
                                      "jsonschema.validate(d, json.load(open(sys.argv[2]))); "
                                      "assert d[\"runs\"][0][\"results\"][0][\"ruleId\"]==\"PTX901\"",
                                      dir.file("out.sarif") + " " + schema) == 0);
}

TEST_CASE("check: --annotate writes the trace with a findings track") {
  TempDir dir;
  Run run = ptadvise_cli(check(dir) + "--exit-zero --annotate annotated.json '" + kSync + "'", dir.path());
  CHECK(run.exit_code == 0);
  std::string annotated = read_file(dir.file("annotated.json"));
  CHECK(annotated.find("\"name\":\"ptadvise findings\"") != std::string::npos);
  CHECK(annotated.find("\"cat\":\"ptadvise\",\"name\":\"PTX901 scalar-read-in-step\"") != std::string::npos);
  // The replay's critical path as a track of its own (check fills its spans only for --annotate).
  CHECK(annotated.find("\"args\":{\"name\":\"critical path (replay)\"}") != std::string::npos);
  CHECK(annotated.find("\"cat\":\"ptadvise.critical_path\"") != std::string::npos);
  if (ptadvise::testing::python_has("json")) {
    CHECK(ptadvise::testing::run_python(
              "import json,sys,gzip; a=json.load(open(sys.argv[1])); o=json.load(gzip.open(sys.argv[2])); "
              "e=a[\"traceEvents\"]; k=[x for x in e if x.get(\"pid\")!=1000000000]; assert k==o[\"traceEvents\"]",
              dir.file("annotated.json") + " '" + kSync + "'") == 0);
  }
}

TEST_CASE("diff: findings that disappeared, step time change and the regression gate") {
  TempDir dir;
  CHECK(ptadvise_cli("diff --no-such-flag a b", dir.path()).exit_code == 2);
  CHECK(ptadvise_cli("diff '" + dir.file("missing.json") + "' '" + kSync + "'", dir.path()).exit_code == 2);
  check(dir);
  // diff has no --select: the configuration keeps it to the test rule, whatever rules.d ships.
  dir.write("diff-config.yaml", "select: [PTX901]\n");
  const std::string rules = "--rules '" + dir.file("test-rules") + "' --config '" + dir.file("diff-config.yaml") + "' ";
  Run text = ptadvise_cli("diff --max-regression 1000 " + rules + "'" + kSync + "' '" + kSyncFixed + "'", dir.path());
  CHECK(text.exit_code == 0);
  CHECK(text.err == "");
  CHECK(text.out.find("findings that appeared (0)\n") != std::string::npos);
  CHECK(text.out.find("findings that disappeared (1):\n  - PTX901 scalar-read-in-step: train.py:18 in forward") !=
        std::string::npos);
  CHECK(text.out.find("  -2.358 ms  aten::_local_scalar_dense  (2.358 -> 0.000 ms)\n") != std::string::npos);
  // Markdown for pull-request comments: the same facts as tables.
  Run markdown = ptadvise_cli("diff --format markdown --max-regression 1000 " + rules + "'" + kSync + "' '" +
                              kSyncFixed + "'", dir.path());
  CHECK(markdown.exit_code == 0);
  CHECK(markdown.out.rfind("## ptadvise diff\n", 0) == 0);
  CHECK(markdown.out.find("### Findings that disappeared (1)\n\n| rule | severity | where | saving per step |\n"
                          "|---|---|---|---:|\n| `PTX901` scalar-read-in-step | warning | `train.py:18 in forward") !=
        std::string::npos);
  CHECK(markdown.out.find("| -2.358 ms | `aten::_local_scalar_dense` | 2.358 ms | 0.000 ms |\n") != std::string::npos);

  // num_workers=0 against its fix: an iteration period of 9.556 ms against 4.089 ms.
  const std::string slow = scenario_path("05_dataloader_num_workers_0");
  const std::string fast = scenario_path("05_dataloader_num_workers_0_fixed");
  Run regressed = ptadvise_cli("diff --format json '" + fast + "' '" + slow + "'", dir.path());
  CHECK(regressed.exit_code == 1);
  const auto diff = nlohmann::json::parse(regressed.out);
  CHECK(diff["regressed"] == true);
  CHECK(diff["step_change_pct"] == 133.67);
  CHECK(ptadvise_cli("diff '" + slow + "' '" + fast + "'", dir.path()).exit_code == 0);
  CHECK(ptadvise_cli("diff --max-regression 140 '" + fast + "' '" + slow + "'", dir.path()).exit_code == 0);
}

TEST_CASE("check: a directory of per-rank traces is one job; shared findings fold; baselines and annotations follow") {
  TempDir dir;
  for (int rank = 0; rank < 2; ++rank) {
    ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
    trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30).distributed(rank, 2).cpu_pid(100 + rank);
    for (int step = 0; step < 3; ++step) {
      double start = 1000.0 * step;
      trace.annotation("ProfilerStep#" + std::to_string(step + 5), start, 900);
      trace.cpu_op("aten::item", start + 100, 300 + 10 * rank);
      trace.cpu_op("aten::_local_scalar_dense", start + 110, 280 + 10 * rank);
    }
    dir.write("ranks/rank" + std::to_string(rank) + ".json", trace.json());
  }
  Run run = ptadvise_cli(check(dir) + "--format json --write-baseline base.yaml --annotate out.json '" +
                             dir.file("ranks") + "'",
                         dir.path());
  CHECK(run.exit_code == 0);  // a fresh baseline accepts everything
  // The same finding on both ranks is shown once, in the job's entry, with the ranks it concerns.
  CHECK(count(run.out, "\"rule_id\": \"PTX901\"") == 1);
  const auto job = nlohmann::json::parse(run.out);
  std::vector<int> trace_ranks;
  for (const auto& trace : job["traces"]) {
    if (trace["rank"].is_number()) trace_ranks.push_back(trace["rank"]);
    for (const auto& finding : trace["findings"]) {
      if (finding["rule_id"] != "PTX901") continue;
      CHECK(finding["ranks"] == nlohmann::json::array({0, 1}));
      CHECK(finding["message"].get<std::string>().find("(on all 2 ranks)") != std::string::npos);
    }
  }
  CHECK(trace_ranks == std::vector<int>{0, 1});
  // The same site on both ranks is one baseline entry.
  CHECK(count(read_file(dir.file("base.yaml")), "  - fingerprint: ") == 1);
  CHECK(std::filesystem::exists(dir.file("out.rank0.json")));
  CHECK(std::filesystem::exists(dir.file("out.rank1.json")));
  CHECK(ptadvise_cli(check(dir) + "--baseline base.yaml '" + dir.file("ranks") + "'", dir.path()).exit_code == 0);
}

TEST_CASE("check: a 130 ns toy trace gets no warning (the noise floor)" * doctest::test_suite("corpus")) {
  const auto toy_path = ptadvise::testing::corpus_trace_path("kineto__docs__traces__before_fix_trace.json");
  if (!toy_path) return;
  const std::string& toy = *toy_path;
  TempDir dir;
  Run run = ptadvise_cli("check --fail-on info '" + toy + "'", dir.path());
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("No findings.") != std::string::npos);
}

TEST_CASE("check: every format says which rules could not check a CPU-only trace" * doctest::test_suite("corpus")) {
  const auto cpu_path =
      ptadvise::testing::corpus_trace_path("HTA__tests__data__cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
  if (!cpu_path) return;
  const std::string& cpu = *cpu_path;
  TempDir dir;
  Run text = ptadvise_cli("check --exit-zero '" + cpu + "'", dir.path(), "COLUMNS=1000");
  CHECK(text.out.find("no GPU activity in the trace") != std::string::npos);
  CHECK(text.out.find("GPU busy") == std::string::npos);
  CHECK(text.out.find("  coverage: 7 of 21 rules checked this trace; 14 could not: no GPU activity (PTA101, ") !=
        std::string::npos);
  Run json = ptadvise_cli("check --exit-zero --format json '" + cpu + "'", dir.path());
  const auto coverage = nlohmann::json::parse(json.out)["traces"][0]["coverage"];
  CHECK(coverage["rules_run"] == 7);
  CHECK(coverage["rules_not_run"][0] == nlohmann::json{{"id", "PTA101"}, {"reason", "no GPU activity"}});
  for (const char* format : {"sarif", "github", "markdown"}) {
    CAPTURE(format);
    Run printed = ptadvise_cli("check --exit-zero --format " + std::string(format) + " '" + cpu + "'", dir.path());
    CHECK(printed.out.find("7 of 21 rules checked this trace") != std::string::npos);
  }
  Run junit = ptadvise_cli("check --exit-zero --format junit '" + cpu + "'", dir.path());
  CHECK(junit.out.find("skipped=\"14\"") != std::string::npos);
  CHECK(junit.out.find("<skipped message=\"could not check this trace: no GPU activity\" />") != std::string::npos);
}

TEST_CASE("check: the README's example of the text report is what check prints") {
  const std::string readme = read_file(PTADVISE_SOURCE_DIR "/README.md");
  const size_t start = readme.find("```text\n");
  REQUIRE(start != std::string::npos);
  const size_t end = readme.find("```", start + 8);
  const std::string shown = readme.substr(start + 8, end - start - 8);
  Run run = ptadvise_cli("check --exit-zero testdata/example_trace.json", PTADVISE_SOURCE_DIR, "COLUMNS=80");
  CHECK(run.exit_code == 0);
  CHECK(run.out == shown);
}

TEST_CASE("check: a trace whose GPU activity was not recorded says so among its warnings" *
          doctest::test_suite("corpus")) {
  const auto counters_path = ptadvise::testing::corpus_trace_path(
      "HTA__tests__data__cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz");
  if (!counters_path) return;
  const std::string& counters = *counters_path;
  TempDir dir;
  Run json = ptadvise_cli("check --exit-zero --format json '" + counters + "'", dir.path());
  CHECK(json.exit_code == 0);
  const auto warnings = nlohmann::json::parse(json.out)["traces"][0]["warnings"];
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].get<std::string>().find(": the trace holds 77 CUPTI range-profiler ranges (performance counters "
                                            "per kernel) and no kernel, copy or memset") != std::string::npos);
}

TEST_CASE("check: --no-whatif skips the replay; savings and predictions come from the ledger") {
  TempDir dir;
  const std::string loader = scenario_path("05_dataloader_num_workers_0");
  Run with = ptadvise_cli("check --format json --exit-zero --select PTA106 '" + loader + "'", dir.path());
  Run without = ptadvise_cli("check --format json --exit-zero --no-whatif --select PTA106 '" + loader + "'", dir.path());
  REQUIRE(with.exit_code == 0);
  REQUIRE(without.exit_code == 0);
  const auto replayed = nlohmann::json::parse(with.out)["traces"][0];
  const auto ledger = nlohmann::json::parse(without.out)["traces"][0];
  CHECK(replayed["whatif"]["available"] == true);
  CHECK(replayed["whatif"]["predicted_step_ms_all_fixes"].get<double>() == doctest::Approx(4.067));
  CHECK(replayed["findings"][0]["saving_basis"] == "ledger+replay");
  CHECK(ledger["whatif"]["available"] == false);
  const auto& finding = ledger["findings"][0];
  CHECK(finding["saving_basis"] == "ledger");
  CHECK(finding["predicted_step_ms"].get<double>() ==
        doctest::Approx(ledger["step_ms"].get<double>() - finding["saving_ms_per_step"].get<double>()).epsilon(0.001));
}

TEST_CASE("check: other JSON files in a directory (hparams, configs) are skipped with a warning; named, they are errors") {
  TempDir dir;
  ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
  for (int step = 0; step < 3; ++step) {
    const double start = 1000.0 * step;
    trace.annotation("ProfilerStep#" + std::to_string(step + 1), start, 900);
    trace.cpu_op("aten::item", start + 100, 300);
    trace.cpu_op("aten::_local_scalar_dense", start + 110, 280);
  }
  dir.write("run/worker0.pt.trace.json", trace.json());
  dir.write("run/hparams.json", "{\"lr\": 0.1, \"batch_size\": 64}");
  dir.write("run/eval/metrics.json", "{\"accuracy\": 0.9}");
  Run run = ptadvise_cli(check(dir) + "--format json '" + dir.file("run") + "'", dir.path());
  CHECK(run.exit_code == 1);  // the trace's finding
  CHECK(count(run.err, "is not a PyTorch profiler trace; skipped") == 2);
  CHECK(run.err.find("hparams.json") != std::string::npos);
  const auto report = nlohmann::json::parse(run.out);
  REQUIRE(report["traces"].size() == 1);
  CHECK(report["traces"][0]["path"].get<std::string>().find("worker0.pt.trace.json") != std::string::npos);
  // `summary` reads directories the same way (its rank is the first, not the second of the directory's files).
  Run summary = ptadvise_cli("summary '" + dir.file("run") + "'", dir.path());
  CHECK(summary.exit_code == 0);
  CHECK(count(summary.err, "is not a PyTorch profiler trace; skipped") == 2);  // below it too, as check
  CHECK(summary.out.find("(rank 0)") != std::string::npos);
  // Named on its own, another JSON document is an error; a directory of nothing else is one too.
  Run named = ptadvise_cli(check(dir) + "'" + dir.file("run/hparams.json") + "'", dir.path());
  CHECK(named.exit_code == 2);
  CHECK(named.err.find("this JSON is not a PyTorch profiler trace") != std::string::npos);
  Run only_other = ptadvise_cli(check(dir) + "'" + dir.file("run/eval") + "'", dir.path());
  CHECK(only_other.exit_code == 2);
  CHECK(only_other.err.find("no PyTorch profiler trace among the 1 JSON file found") != std::string::npos);
  Run summary_other = ptadvise_cli("summary '" + dir.file("run/eval") + "'", dir.path());
  CHECK(summary_other.exit_code == 2);
  CHECK(summary_other.err.find("no PyTorch profiler trace among the 1 JSON file found") != std::string::npos);
  // A broken trace in a directory still stops the check: only other documents are skipped.
  dir.write("run/worker1.pt.trace.json", "{\"traceEvents\": [{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": ");
  Run broken = ptadvise_cli(check(dir) + "'" + dir.file("run") + "'", dir.path());
  CHECK(broken.exit_code == 2);
}
