// The CLI under hostile conditions: atomic outputs (full disk, planted symlinks, two traces of one rank),
// partial traces failing the gate, absurd inputs ending in one line and exit 2, names from a trace that
// must not act on a terminal or a CI log.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "../advisor/python_check.h"
#include "../advisor/temp_dir.h"
#include "ci_log_safety.h"
#include "cli_run.h"
#include "gzip_bytes.h"
#include "trace_builder.h"

namespace {

using ptadvise::testing::read_file;
using ptadvise::testing::TempDir;

using Run = ptadvise::testing::Run;

// `prefix` runs in the same shell first (ulimit, trap).
Run cli(const std::string& args, const std::string& prefix = "") {
  return ptadvise::testing::run_shell("bash -c '" + prefix + " env -u GITHUB_STEP_SUMMARY " PTADVISE_BINARY " " +
                                      args + "'");
}

const std::string kScenario = PTADVISE_SOURCE_DIR "/testdata/scenarios/01_loss_weight_every_step.json.gz";

// 300,000 CPU ops, 32 MB: the loader reads windows of it (2 MiB each) on worker threads as well.
std::string big_trace_json() {
  ptadvise::testing::TraceBuilder trace;
  for (int i = 0; i < 300000; ++i) trace.cpu_op("op" + std::to_string(i), i, 1);
  return trace.json();
}

}  // namespace

TEST_CASE("hardening cli: a report that cannot be written completely leaves the previous file intact") {
  TempDir dir;
  const std::string out = dir.write("report.json", "previous report\n");
  // 1 KiB file size limit: the JSON report is larger, so writing it fails part way (EFBIG, SIGXFSZ ignored).
  Run run = cli("check " + kScenario + " --output json=" + out, "ulimit -f 1; trap \"\" XFSZ;");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("ptadvise: error: " + out + ": cannot write the json report: File too large") == 0);
  CHECK(read_file(out) == "previous report\n");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file() ? 1 : 0;
  CHECK(files == 1);  // no temporary file left behind
}

TEST_CASE("hardening cli: interrupted while writing, ptadvise leaves the previous file and no temporary") {
  TempDir dir;
  const std::string out = dir.write("annotated.json.gz", "previous\n");
  bool caught = false;
  // SIGTERM the moment the temporary file exists (the gzip copy of the trace takes a while); a run that
  // finished before it was seen is tried again.
  for (int attempt = 0; attempt < 20 && !caught; ++attempt) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int null = open("/dev/null", O_WRONLY);  // not freopen: it would flush the test's own buffered output
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      execl(PTADVISE_BINARY, PTADVISE_BINARY, "check", "--exit-zero", kScenario.c_str(), "--annotate", out.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      bool temporary = false;
      for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        temporary = temporary || entry.path().filename().string().find(".tmp") != std::string::npos;
      }
      if (temporary) {
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        caught = WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM;
        break;
      }
    }
    if (!caught) dir.write("annotated.json.gz", "previous\n");
  }
  REQUIRE(caught);
  CHECK(read_file(out) == "previous\n");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file() ? 1 : 0;
  CHECK(files == 1);  // the temporary file went with the process
}

TEST_CASE("hardening cli: planted OUT.tmp symlinks are never followed") {
  TempDir dir;
  const std::string victim = dir.write("victim.txt", "keep me\n");
  for (const char* name : {"report.sarif.tmp", "annotated.json.tmp", "base.yaml.tmp"}) {
    std::filesystem::create_symlink(victim, dir.file(name));
  }
  Run run = cli("check " + kScenario + " --exit-zero --output sarif=" + dir.file("report.sarif") +
                " --annotate " + dir.file("annotated.json") + " --write-baseline " + dir.file("base.yaml"));
  CHECK(run.exit_code == 0);
  CHECK(read_file(victim) == "keep me\n");
  CHECK(read_file(dir.file("report.sarif")).find("\"version\": \"2.1.0\"") != std::string::npos);
  CHECK(read_file(dir.file("annotated.json")).find("traceEvents") != std::string::npos);
  CHECK(read_file(dir.file("base.yaml")).find("findings:") != std::string::npos);
}

TEST_CASE("hardening cli: two traces of the same rank get two annotated files") {
  TempDir dir;
  for (const char* name : {"a.json", "b.json"}) {
    ptadvise::testing::TraceBuilder trace;
    trace.distributed(0, 2);
    trace.annotation("ProfilerStep#1", 0, 1000);
    trace.cpu_op(std::string("op_") + name, 10, 100);
    dir.write(std::string("traces/") + name, trace.json());
  }
  Run run = cli("check --exit-zero " + dir.file("traces") + " --annotate " + dir.file("out.json"));
  CHECK(run.exit_code == 0);
  std::string first = read_file(dir.file("out.rank0.json"));
  std::string second = read_file(dir.file("out.trace1.json"));
  CHECK(first.find("op_a.json") != std::string::npos);
  CHECK(second.find("op_b.json") != std::string::npos);
}

TEST_CASE("hardening cli: ranks of a job checked one by one, each with --annotate OUT, keep their own files") {
  TempDir dir;
  for (int rank : {0, 1}) {
    ptadvise::testing::TraceBuilder trace;
    trace.distributed(rank, 2);
    trace.annotation("ProfilerStep#1", 0, 1000);
    trace.cpu_op("op_of_rank" + std::to_string(rank), 10, 100);
    dir.write("rank" + std::to_string(rank) + ".json", trace.json());
  }
  // As every rank's torch.profiler hook would run it, each in its own process.
  for (int rank : {0, 1}) {
    Run run = cli("check --exit-zero " + dir.file("rank" + std::to_string(rank) + ".json") + " --annotate " +
                  dir.file("out.json"));
    CHECK(run.exit_code == 0);
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("out.json")));
  CHECK(read_file(dir.file("out.rank0.json")).find("op_of_rank0") != std::string::npos);
  CHECK(read_file(dir.file("out.rank1.json")).find("op_of_rank1") != std::string::npos);
  // A trace that is no rank of a larger job keeps the name it was given.
  ptadvise::testing::TraceBuilder alone;
  alone.annotation("ProfilerStep#1", 0, 1000);
  alone.cpu_op("op_alone", 10, 100);
  CHECK(cli("check --exit-zero " + dir.write("alone.json", alone.json()) + " --annotate " + dir.file("alone_out.json"))
            .exit_code == 0);
  CHECK(read_file(dir.file("alone_out.json")).find("op_alone") != std::string::npos);
}

TEST_CASE("hardening cli: a trace mostly lost fails the gate unless partial traces are accepted") {
  TempDir dir;
  ptadvise::testing::TraceBuilder trace;
  trace.annotation("ProfilerStep#1", 0, 1000);
  for (int i = 0; i < 10; ++i) trace.cpu_op("op" + std::to_string(i), 10 + i, 1);
  std::string text = trace.json();
  // Two unescaped quotes in every line but the first few: most of the trace cannot be read.
  std::string garbage;
  for (int i = 0; i < 50; ++i) garbage += "{\"ph\": \"X\", \"name\": \"a\"b\", \"ts\": 1, \"dur\": 1, \"pad\": \"" + std::string(100, 'x') + "\"},\n";
  size_t at = text.find("\n", text.find("\"op3\"")) + 1;
  const std::string path = dir.write("partial.json", text.substr(0, at) + garbage + text.substr(at));
  Run refused = cli("check " + path);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("ptadvise: error: " + path + ": ") != std::string::npos);
  CHECK(refused.err.find("of the trace") != std::string::npos);
  CHECK(refused.err.find("--accept-partial") != std::string::npos);
  CHECK(refused.out.empty());
  Run accepted = cli("check --accept-partial " + path);
  CHECK(accepted.exit_code == 0);
  CHECK(accepted.err.find("ptadvise: warning: " + path + ": ") != std::string::npos);
  Run summary = cli("summary " + path);
  CHECK(summary.exit_code == 2);
}

TEST_CASE("hardening cli: out of memory is one line and exit 2, also while ranks are checked in parallel") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer reserves terabytes of address space at start: under `ulimit -v` the sanitized
  // binary cannot start at all, so the limit this test sets says nothing about ptadvise there.
  MESSAGE("skipped under AddressSanitizer: the address-space limit stops the sanitizer itself");
  return;
#endif
  TempDir dir;
  const std::string json = big_trace_json();
  const std::string path = dir.write("big.json", json);
  dir.write("ranks/rank0.json", json);
  dir.write("ranks/rank1.json", json);
  // The budget check is told there is plenty; the address-space limit says otherwise. A worker thread's
  // std::bad_alloc used to reach std::terminate (exit 134).
  for (const std::string& command : {"summary " + path, "check --threads 2 " + dir.file("ranks")}) {
    CAPTURE(command);
    Run run = cli(command, command.starts_with("summary") ? "ulimit -v 120000; export PTADVISE_MEMORY_LIMIT=64GiB;"
                                                           : "ulimit -v 200000; export PTADVISE_MEMORY_LIMIT=64GiB;");
    CHECK(run.exit_code == 2);
    // The generic line, or the file whose read ran out ("ranks/rank0.json: out of memory for N bytes").
    CHECK(run.err.find("ptadvise: error: ") == 0);
    CHECK(run.err.find("out of memory") != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
  // Allocations fail at other points under other limits: on the loading thread, on a worker reading a
  // window ahead (a worker once went on to its next window with a freed copy: SIGSEGV), in the link pass.
  // Each run ends in a result or in the one line, never in a signal.
  for (int limit_kib = 100000; limit_kib <= 260000; limit_kib += 8000) {
    const std::string prefix =
        "ulimit -v " + std::to_string(limit_kib) + "; export PTADVISE_MEMORY_LIMIT=64GiB;";
    CAPTURE(limit_kib);
    Run run = cli("summary " + path, prefix);
    CHECK((run.exit_code == 0 || run.exit_code == 2));
    if (run.exit_code == 2) CHECK(run.err.find("ptadvise: error: out of memory") == 0);
  }
}

TEST_CASE("hardening cli: allocations failing anywhere end in a result or one line and exit 2, never a signal") {
#ifndef PTADVISE_FAILING_MALLOC
  MESSAGE("skipped under the sanitizers: they replace malloc, which this test replaces to make it fail");
  return;
#else
  TempDir dir;
  const std::string path = dir.write("big.json", big_trace_json());
  // A job's digests, for merge (written without the shim).
  const std::string job = PTADVISE_SOURCE_DIR "/testdata/job/skewed";
  REQUIRE(cli("check --exit-zero --digest-out " + dir.file("d.json") + " " + job).exit_code == 0);
  const std::string digests = dir.file("d.rank0.json") + " " + dir.file("d.rank1.json");
  struct Case {
    std::string command;
    unsigned min_bytes;    // only allocations this large fail
    bool workers = false;  // only on threads besides the main one
  };
  // Large allocations alone: the window copies and parser buffers (a worker once went on after its copy
  // failed, into a freed buffer: SIGSEGV; simdjson leaves its string buffer unallocated without saying so).
  // Every allocation: the rules, the what-if replay, the printers.
  const std::vector<Case> cases{{"summary " + path, 1u << 20, true},
                                {"summary " + path, 1u << 20},
                                {"summary " + path, 64},
                                {"check --exit-zero --format sarif " + kScenario, 64},
                                // nlohmann::json's destructor allocates; the rules' YAML and RE2 are not
                                // exception-safe (each ended in a signal now and then).
                                {"check --exit-zero --format html " + kScenario, 64},
                                {"rules --format json", 64},
                                {"check --exit-zero --threads 2 " + path + " " + kScenario, 64},
                                // The other commands: a job from digests, two traces compared, a replay.
                                {"merge --exit-zero --format sarif " + digests, 64},
                                {"diff --format json " + kScenario + " " + job + "/rank-1.json", 64},
                                {"whatif --format json " + kScenario, 64}};
  int failed_runs = 0, ok_runs = 0;
  for (const Case& test : cases) {
    for (int every : {3, 200, 5000}) {
      for (int seed = 1; seed <= 4; ++seed) {
        const std::string prefix = "export LD_PRELOAD=" PTADVISE_FAILING_MALLOC " PTADVISE_FAIL_EVERY=" +
                                   std::to_string(every) + " PTADVISE_FAIL_MIN=" + std::to_string(test.min_bytes) +
                                   " PTADVISE_FAIL_AFTER=1000000 PTADVISE_FAIL_SEED=" + std::to_string(seed) +
                                   " PTADVISE_FAIL_WORKERS=" + (test.workers ? "1" : "0") + ";";
        CAPTURE(test.command);
        CAPTURE(every);
        CAPTURE(seed);
        Run run = cli(test.command, prefix);
        CHECK((run.exit_code == 0 || run.exit_code == 2 || (run.exit_code == 1 && test.command.starts_with("diff"))));
        if (run.exit_code == 2) {
          ++failed_runs;
          // The last line says what happened (warnings about the trace may come before it).
          CHECK(run.err.find("ptadvise: error: out of memory") != std::string::npos);
          CHECK(run.err.find("terminate called") == std::string::npos);
        } else if (run.exit_code != 1) {
          ++ok_runs;
        }
      }
    }
  }
  // The shim did fail allocations (else this test checks nothing), and not every run.
  CHECK(failed_runs > 0);
  CHECK(ok_runs > 0);
#endif
}

TEST_CASE("hardening cli: a regression limit that is not a finite percentage is an error, not a gate that never fails") {
  for (const char* limit : {"nan", "inf", "-1"}) {
    CAPTURE(limit);
    Run run = cli("diff " + kScenario + " " + kScenario + " --max-regression " + limit);
    CHECK(run.exit_code == 2);
    CHECK(run.err == "ptadvise: error: --max-regression: expected a finite percentage >= 0\n");
  }
}

TEST_CASE("hardening cli: run refuses an output directory it cannot write before starting the program") {
  TempDir dir;
  const std::string marker = dir.file("started");
  // sysfs: a directory nobody, root included, can create files in.
  Run run = cli("run --capture torch --out /sys/kernel -- python3 -c \"open(\\\"" + marker + "\\\", \\\"w\\\")\"");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("ptadvise: error: cannot write into the output directory '/sys/kernel': ") == 0);
  CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("hardening cli: traces from a pipe are checked; annotating one is a clear error") {
  TempDir dir;
  Run piped = cli("check --exit-zero --format json <(zcat " + kScenario + ")");
  CHECK(piped.exit_code == 0);
  CHECK(piped.out.find("\"rule_id\"") != std::string::npos);
  Run annotate = cli("check --exit-zero <(zcat " + kScenario + ") --annotate " + dir.file("out.json"));
  CHECK(annotate.exit_code == 2);
  CHECK(annotate.err.find(": --annotate needs the trace as a file (it was read from a pipe)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("out.json")));
}

namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

std::string problems_of(const Run& run, bool github = false) {
  std::string text;
  for (const auto& p : ptadvise::testing::ci_log_problems(run.out, github)) text += "stdout " + p + "\n";
  for (const auto& p : ptadvise::testing::ci_log_problems(run.err)) text += "stderr " + p + "\n";
  return text;
}

}  // namespace

TEST_CASE("hardening cli: names and paths from a trace forge no CI log command and no terminal escape") {
  TempDir dir;
  // JSON escapes in the trace: a newline, ESC, CR, then GitHub's legacy command form.
  const std::string payload = "\\n::error file=a::pwned\\u001b[31m\\r ##[error]legacy";
  std::string trace = ptadvise::testing::gunzip_file(kScenario);
  REQUIRE(!trace.empty());
  replace_all(trace, "\"aten::copy_\"", "\"aten::copy_" + payload + "\"");
  replace_all(trace, "Memcpy HtoD (Pageable -> Device)\"", "Memcpy HtoD (Pageable -> Device)" + payload + "\"");
  replace_all(trace, "\"NVIDIA A100-SXM4-40GB\"", "\"NVIDIA A100-SXM4-40GB" + payload + "\"");
  // The folder's name reaches every line that names the trace.
  dir.write("t\n::error file=b::pwned ##[error]path/trace.json", trace);
  const std::string traces = dir.path() + "/t*";
  const std::string file = traces + "/trace.json";
  for (const char* format : {"text", "json", "sarif", "github", "junit", "markdown"}) {
    CAPTURE(format);
    Run run = cli(std::string("check --exit-zero --format ") + format + " " + traces);
    CHECK(run.exit_code == 0);
    CHECK(run.out.find("pwned") != std::string::npos);
    CHECK(problems_of(run, std::string(format) == "github") == "");
  }
  for (const std::string& command : {"summary " + file, "summary --format json " + file, "whatif " + file,
                                     "whatif --format json " + file, "diff " + kScenario + " " + file}) {
    CAPTURE(command);
    Run run = cli(command);
    CHECK(run.exit_code == 0);
    CHECK(run.out.find("pwned") != std::string::npos);
    CHECK(problems_of(run) == "");
  }
  const std::string missing = "\"$(echo " + file + ")/missing\"";  // a glob matches only what exists
  for (const std::string& command : {"check " + missing, "summary " + missing, "whatif " + missing}) {
    CAPTURE(command);
    Run run = cli(command);
    CHECK(run.exit_code == 2);
    CHECK(run.err.find("pwned") != std::string::npos);
    CHECK(problems_of(run) == "");
  }
}

TEST_CASE("hardening cli: a PTADVISE_MEMORY_LIMIT that is no size is an error, not the measured budget") {
  for (const char* value : {"abc", "-1", "1e400", "8 GiBs"}) {
    CAPTURE(value);
    Run run = cli("check --exit-zero " + kScenario, std::string("PTADVISE_MEMORY_LIMIT=\"") + value + "\"");
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK(run.err == std::string("ptadvise: error: PTADVISE_MEMORY_LIMIT: expected a size such as 8GiB, 512MB or "
                                 "1000000 (bytes), got '") + value + "'\n");
  }
  // Read before any command runs, but not for --help and --version.
  CHECK(cli("--version", "PTADVISE_MEMORY_LIMIT=abc").exit_code == 0);
  CHECK(cli("check --exit-zero " + kScenario, "PTADVISE_MEMORY_LIMIT=8GiB").exit_code == 0);
}
