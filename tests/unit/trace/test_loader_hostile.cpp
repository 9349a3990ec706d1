// The loader against hostile or unlucky input: broken quotes anywhere, traces that are mostly lost, cut
// gzip streams, files rewritten while loading, pipes, memory limits, absurd time bases.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/io.h"
#include "ptadvise/loader.h"
#include "gzip_bytes.h"
#include "loader_test_support.h"
#include "scoped_env.h"
#include "trace_builder.h"

using ptadvise::LoadError;
using ptadvise::Timeline;
using ptadvise::testing::ScopedEnv;
using ptadvise::testing::TraceBuilder;
using loader_test::gzip;
using loader_test::load_ok;
using loader_test::ops_trace;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ptadvise_hostile_" + std::to_string(getpid()) + "_" + name))
      .string();
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Loads `bytes` written into a pipe by a child process, through /dev/fd/N (a path that is no regular file).
// The child stops quietly when the loader stops reading.
std::variant<Timeline, LoadError> load_from_pipe(const std::string& bytes, std::string& path) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t writer = fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    close(fds[0]);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t wrote = write(fds[1], bytes.data() + done, bytes.size() - done);
      if (wrote <= 0) _exit(0);
      done += static_cast<size_t>(wrote);
    }
    _exit(0);
  }
  close(fds[1]);
  path = "/dev/fd/" + std::to_string(fds[0]);
  auto result = ptadvise::load_trace_file(path);
  close(fds[0]);
  waitpid(writer, nullptr, 0);
  return result;
}

}  // namespace

TEST_CASE("hostile: one odd unescaped quote early in a trace costs one event, not the rest") {
  for (const char* bad : {"say \"hi", "\"", "a \"b\" \"c", "C:\\\\dir\\\\\"x"}) {
    CAPTURE(bad);
    Timeline timeline = load_ok(ops_trace(200, 2, bad));
    CHECK(timeline.events.size() == 199);
    CHECK(timeline.stats.recovered_errors == 1);
    CHECK(timeline.stats.truncated_bytes == 0);
    CHECK(timeline.name(2) == "op3");
    CHECK(timeline.name(198) == "op199");
    CHECK_FALSE(ptadvise::partial_trace_problem(timeline));
  }
}

TEST_CASE("hostile: an odd unescaped quote in the metadata before the events costs that metadata, not the trace") {
  for (const char* value : {"[{\"id\": 0, \"name\": \"Tesla \"V100\", \"computeMajor\": 7}]",  // odd count
                            "\"a \"quoted\" name\""}) {                                                  // even count
    CAPTURE(value);
    TraceBuilder trace;
    trace.top_level("someMetadata", value);
    for (int i = 0; i < 50; ++i) trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
    const std::string text = trace.json();
    Timeline timeline = load_ok(text);
    CHECK(timeline.events.size() == 50);
    REQUIRE_FALSE(timeline.stats.warnings.empty());
    CHECK(timeline.stats.warnings[0] ==
          "trace.json: byte " + std::to_string(text.find(value)) +
              ": the value of the top-level key \"someMetadata\" is not valid JSON (an unescaped quote?); ignored it "
              "up to \"traceEvents\" at byte " +
              std::to_string(text.find("\"traceEvents\"")));
    CHECK_FALSE(ptadvise::partial_trace_problem(timeline));
  }
}

TEST_CASE("hostile: odd quotes in several events, and in the first event") {
  TraceBuilder trace;
  for (int i = 0; i < 100; ++i) {
    bool bad = i == 0 || i == 7 || i == 8 || i == 50;
    if (bad) {
      trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"x\"y\", \"pid\": 1, \"tid\": 1, \"ts\": " +
                      std::to_string(10 * i) + ", \"dur\": 5}");
    } else {
      trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
    }
  }
  Timeline timeline = load_ok(trace.json());
  CHECK(timeline.events.size() == 96);
  CHECK(timeline.stats.recovered_errors == 4);
}

TEST_CASE("hostile: an odd quote in a minified trace (events separated by '},{')") {
  std::string text = ops_trace(50, 10, "bad\"name");
  std::string minified;
  for (char c : text) {
    if (c != '\n') minified += c;
  }
  Timeline timeline = load_ok(minified);
  CHECK(timeline.events.size() == 49);
  CHECK(timeline.stats.recovered_errors == 1);
}

TEST_CASE("hostile: an odd quote in a trace larger than one parse window") {
  // About 9 MiB: the broken event sits in the second window.
  const int n = 120000;
  Timeline timeline = load_ok(ops_trace(n, 70000, "x\"y"));
  CHECK(timeline.events.size() == static_cast<size_t>(n - 1));
  CHECK(timeline.stats.recovered_errors == 1);
  CHECK(timeline.name(static_cast<ptadvise::EventIndex>(n - 2)) == "op" + std::to_string(n - 1));
}

TEST_CASE("hostile: a trace mostly lost is partial; one lost event is not") {
  std::string text = ops_trace(100, 1000, "");
  // Garbage between events: 10 lines that are not JSON, each longer than all events together.
  std::string garbage;
  for (int i = 0; i < 10; ++i) garbage += "{\"ph\": \"X\" this is not json " + std::string(2000, 'z') + "\n";
  size_t at = text.find("\n", text.find("\"op5\"")) + 1;
  std::string broken = text.substr(0, at) + garbage + text.substr(at);
  Timeline timeline = load_ok(broken);
  CHECK(timeline.events.size() == 100);
  REQUIRE(ptadvise::partial_trace_problem(timeline));
  CHECK(ptadvise::partial_trace_problem(timeline)->find("trace.json: ") == 0);
  CHECK(ptadvise::partial_trace_problem(timeline)->find("could not be read") != std::string::npos);
  CHECK(ptadvise::partial_trace_problem(timeline)->find("--accept-partial") != std::string::npos);

  // Malformed events (no ts) for most of the trace.
  TraceBuilder malformed;
  for (int i = 0; i < 10; ++i) malformed.cpu_op("op" + std::to_string(i), 10 * i, 5);
  for (int i = 0; i < 30; ++i) malformed.raw_event("{\"ph\": \"X\", \"name\": \"n\", \"pid\": 1, \"tid\": 1, \"dur\": 1}");
  Timeline mostly_malformed = load_ok(malformed.json());
  REQUIRE(ptadvise::partial_trace_problem(mostly_malformed));
  CHECK(ptadvise::partial_trace_problem(mostly_malformed)->find("75.0% of the events (30 of 40)") != std::string::npos);
}

TEST_CASE("hostile: begin/end events are said to be ignored; a trace made of them is partial, not green") {
  // 40 "B"/"E" pairs beside 10 complete events: the pairs' time is not read. They used to be counted as
  // unknown phases in silence, and a trace of them analysed as an idle one: "No findings", exit 0.
  TraceBuilder trace;
  for (int i = 0; i < 10; ++i) trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
  for (int i = 0; i < 40; ++i) {
    trace.raw_event("{\"ph\": \"B\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(200 + 10 * i) + "}");
    trace.raw_event("{\"ph\": \"E\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(205 + 10 * i) + "}");
  }
  Timeline timeline = load_ok(trace.json());
  CHECK(timeline.events.size() == 10);
  CHECK(timeline.stats.begin_end_events == 80);
  CHECK(timeline.stats.unknown_phases == 80);
  CHECK(timeline.stats.warnings ==
        std::vector<std::string>{"trace.json: ignored 80 begin/end (\"ph\": \"B\"/\"E\") events: ptadvise reads complete "
                                 "(\"X\") events, as the PyTorch profiler writes them; their time is not in the results"});
  REQUIRE(ptadvise::partial_trace_problem(timeline));
  CHECK(*ptadvise::partial_trace_problem(timeline) ==
        "trace.json: 88.9% of the events (80 of 90) are begin/end (\"B\"/\"E\") events, which are not read; results on "
        "the rest would not describe the run (pass --accept-partial to analyse it anyway)");
  // A few, and counters (which hold no time of ops), are not partial.
  TraceBuilder few;
  for (int i = 0; i < 100; ++i) few.cpu_op("op" + std::to_string(i), 10 * i, 5);
  few.raw_event("{\"ph\": \"B\", \"name\": \"x\", \"pid\": 1, \"tid\": 1, \"ts\": 2000}");
  for (int i = 0; i < 50; ++i) few.raw_event("{\"ph\": \"C\", \"name\": \"mem\", \"pid\": 1, \"ts\": 5, \"args\": {\"v\": 1}}");
  Timeline kept = load_ok(few.json());
  CHECK(kept.stats.begin_end_events == 1);
  CHECK(kept.stats.unknown_phases == 51);
  CHECK_FALSE(ptadvise::partial_trace_problem(kept));
}

TEST_CASE("hostile: events of a category no profiler writes are named; a trace made of them is partial") {
  // A writer that renamed "kernel": the kernels are kept as "other", which no figure counts; the check
  // used to show an idle GPU and pass.
  TraceBuilder trace;
  for (int i = 0; i < 10; ++i) trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
  for (int i = 0; i < 20; ++i) {
    trace.raw_event("{\"ph\": \"X\", \"cat\": \"gpu_kernel_v2\", \"name\": \"sgemm\", \"pid\": 0, \"tid\": 7, \"ts\": " +
                    std::to_string(200 + 10 * i) + ", \"dur\": 5}");
  }
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"overhead\", \"name\": \"CUPTI\", \"pid\": 0, \"tid\": 1, \"ts\": 5, \"dur\": 1}");
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"mtia_runtime\", \"name\": \"x\", \"pid\": 0, \"tid\": 1, \"ts\": 6, \"dur\": 1}");
  Timeline timeline = load_ok(trace.json());
  CHECK(timeline.events.size() == 32);
  CHECK(timeline.stats.unknown_category_events == 20);
  CHECK(timeline.stats.warnings == std::vector<std::string>{"trace.json: 20 of 32 events have a category ptadvise does not "
                                                            "read (\"gpu_kernel_v2\" 20): no figure counts their time"});
  REQUIRE(ptadvise::partial_trace_problem(timeline));
  CHECK(*ptadvise::partial_trace_problem(timeline) ==
        "trace.json: 62.5% of the events (20 of 32) have a category ptadvise does not read; results on the rest "
        "would not describe the run (pass --accept-partial to analyse it anyway)");
  // Categories the profiler writes for work ptadvise does not analyse are not named, nor is an unknown
  // one under 1% of the events.
  TraceBuilder known;
  for (int i = 0; i < 300; ++i) known.cpu_op("op" + std::to_string(i), 10 * i, 5);
  for (int i = 0; i < 50; ++i) {
    known.raw_event("{\"ph\": \"X\", \"cat\": \"overhead\", \"name\": \"CUPTI\", \"pid\": 0, \"tid\": 1, \"ts\": 5, \"dur\": 1}");
  }
  known.raw_event("{\"ph\": \"X\", \"cat\": \"critical_path\", \"name\": \"x\", \"pid\": 0, \"tid\": 1, \"ts\": 6, \"dur\": 1}");
  Timeline quiet = load_ok(known.json());
  CHECK(quiet.stats.unknown_category_events == 1);
  CHECK(quiet.stats.warnings.empty());
  CHECK_FALSE(ptadvise::partial_trace_problem(quiet));
}

TEST_CASE("hostile: a .json.gz cut short keeps what inflates, with the cut-file warning") {
  std::string text = ops_trace(5000, 100000, "");
  std::string compressed = gzip(text);
  std::string cut = compressed.substr(0, compressed.size() * 9 / 10);
  Timeline timeline = load_ok(cut);
  CHECK(timeline.events.size() > 3000);
  CHECK(timeline.events.size() < 5000);
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0].find("trace.json: the gzip data is cut short or damaged after compressed byte ") ==
        0);
  CHECK(timeline.stats.warnings[1].find("trace.json: file ends inside an event at byte ") == 0);
  CHECK_FALSE(ptadvise::partial_trace_problem(timeline));

  // A complete member followed by a cut one keeps both parts.
  Timeline two = load_ok(gzip(text.substr(0, 1000)) + gzip(text.substr(1000)).substr(0, compressed.size() / 2));
  CHECK(two.events.size() > 1000);
}

TEST_CASE("hostile: a .json.gz damaged part way is partial: what follows the damage counts as unread") {
  const std::string text = ops_trace(5000, 100000, "");
  const size_t fifth = text.size() / 5;
  const std::string first = gzip(text.substr(0, fifth));
  std::string second = gzip(text.substr(fifth));
  // The second member's first deflate block (right after its 10-byte header) gets the reserved block type.
  std::string damaged = second;
  damaged[10] = 0x06;
  Timeline timeline = load_ok(first + damaged);
  CHECK(timeline.events.size() < 1100);
  REQUIRE_FALSE(timeline.stats.warnings.empty());
  CAPTURE(timeline.stats.warnings[0]);
  CHECK(timeline.stats.warnings[0].find("trace.json: the gzip data is damaged at compressed byte " +
                                        std::to_string(first.size() + 11) + " of " +
                                        std::to_string(first.size() + second.size()) + "; using the ") == 0);
  CHECK(timeline.stats.unread_bytes > 2 * fifth);
  REQUIRE(ptadvise::partial_trace_problem(timeline));
  CHECK(ptadvise::partial_trace_problem(timeline)->find("of the trace (about ") != std::string::npos);

  // A member whose header is damaged reads as trailing garbage: unread as well.
  damaged = second;
  damaged[0] = 0;
  Timeline headless = load_ok(first + damaged);
  REQUIRE_FALSE(headless.stats.warnings.empty());
  CHECK(headless.stats.warnings[0].find("bytes after the gzip data at compressed byte " + std::to_string(first.size()) +
                                        " are not gzip data (a damaged member?)") != std::string::npos);
  CHECK(ptadvise::partial_trace_problem(headless));

  // Zero padding after the last member (tape blocks) is no loss.
  Timeline padded = load_ok(gzip(text) + std::string(4096, '\0'));
  CHECK(padded.events.size() == 5000);
  CHECK(padded.stats.warnings.empty());
  CHECK_FALSE(ptadvise::partial_trace_problem(padded));
}

TEST_CASE("hostile: baseTimeNanoseconds near the int64 limit never overflows absolute times") {
  TraceBuilder trace(ptadvise::testing::Era::RelativeFloatUs);
  trace.base_time_ns(INT64_MAX - 1000);
  trace.cpu_op("a", 0, 5);
  trace.cpu_op("b", 5000, 5);
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 2);
  int64_t last = timeline.events.ts_ns[1];
  CHECK(last == 5000000);
  CHECK(timeline.origin_ns <= INT64_MAX - last);
  bool warned = false;
  for (const auto& warning : timeline.stats.warnings) warned = warned || warning.find("out of range") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("hostile: an event far from the rest of the trace is malformed, the others are kept in order") {
  // Each time is a valid one (under 2^61 ns); a stray clock puts one event 60 years before the others.
  TraceBuilder trace;
  trace.cpu_op("a", 1.7e15, 5);
  trace.cpu_op("stray", 1000, 5);
  trace.cpu_op("b", 1.7e15 + 10, 5);
  trace.cpu_op("late", 1.7e15 + 20, 1e11);  // ends 28 hours after the others: far too
  trace.kernel("k", 1.7e15 + 12, 3, 7);
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 3);
  CHECK(timeline.name(0) == "a");
  CHECK(timeline.name(1) == "b");
  CHECK(timeline.name(2) == "k");
  CHECK(timeline.events.ts_ns[2] == 12'000);
  CHECK(timeline.events.correlation[2] == 7);
  CHECK(timeline.stats.malformed_events == 2);
  bool warned = false;
  for (const auto& warning : timeline.stats.warnings) {
    warned = warned || warning.find("skipped 2 malformed events (first at \"stray\" at ts 1000.000 us, more than 19 "
                                    "hours from the median time") != std::string::npos;
  }
  CHECK(warned);
}

TEST_CASE("hostile: events lasting longer together than any run are refused, not summed past int64") {
  // 2,000 ops of 18 hours each (every one a valid duration and time): 1,500 days together. Sums over them (the
  // union of a selection per thread, totals per name) used to overflow int64.
  TraceBuilder trace;
  for (int i = 0; i < 2000; ++i) trace.cpu_op("op", 1.7e15 + i, 18 * 3600e6, "", 1 + i % 50);
  auto result = ptadvise::load_trace_bytes(trace.json(), "long.json");
  REQUIRE(std::holds_alternative<LoadError>(result));
  CHECK(std::get<LoadError>(result).message ==
        "long.json: the events' durations add up to 1500 days (more than 208): not the trace of a run, not analysed");
}

TEST_CASE("hostile: a ledger of devices x host events beyond the memory budget is refused, not allocated") {
  // 1,000 GPUs, each running one kernel in a step of 2,000 host launches: every device idles through the
  // whole step, so the idle ledger holds about devices x host events entries (4 M, 160 MB). Past a
  // quarter of the memory available it stops with std::bad_alloc (one line and exit 2 in the CLI) instead
  // of growing until the system kills the process (70,000 GPUs took 24 GB before).
  TraceBuilder trace;
  trace.annotation("ProfilerStep#1", 1000, 5000);
  trace.annotation("ProfilerStep#2", 6000, 5000);
  for (int d = 0; d < 1000; ++d) trace.kernel("k", 1001 + d * 2, 0.5, d + 1, d);
  for (int i = 0; i < 2000; ++i) trace.runtime("cudaLaunchKernel", 1000.5 + i * 2.4, 0.4, i < 1000 ? i + 1 : 5000 + i);
  Timeline timeline = trace.load();
  {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "64MiB");
    std::string message;
    try {
      (void)ptadvise::analyze(timeline);
    } catch (const ptadvise::BudgetExceeded& e) {  // a std::bad_alloc: carried like any out-of-memory
      message = e.what();
    }
    CHECK(message == "trace.json: the idle ledger needs more than 16 MiB, a quarter of the memory available (1000 "
                     "GPUs idle through the host's events); set PTADVISE_MEMORY_LIMIT to change the limit");
  }
  CHECK(ptadvise::analyze(timeline).idle.size() > 1'000'000);  // within the budget it is built as before
}

TEST_CASE("hostile: a file truncated after loading never kills the process (no SIGBUS)") {
  const std::string path = temp_path("truncate.json");
  TraceBuilder trace;
  for (int i = 0; i < 20000; ++i) trace.cpu_op("op" + std::to_string(i), 10 * i, 5, "\"Sequence number\": 7");
  write_file(path, trace.json());
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto result = ptadvise::load_trace_file(path);
    if (!std::holds_alternative<Timeline>(result)) _exit(3);
    const Timeline& timeline = std::get<Timeline>(result);
    if (truncate(path.c_str(), 0) != 0) _exit(4);
    // Reads args from the buffer, all the way to the last event.
    int64_t sum = 0;
    for (ptadvise::EventIndex i = 0; i < timeline.events.size(); ++i) sum += timeline.arg_int(i, "Sequence number").value_or(0);
    _exit(sum == 7 * 20000 ? 0 : 5);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::filesystem::remove(path);
  CHECK_FALSE(WIFSIGNALED(status));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("hostile: traces from a pipe and from stdin") {
  std::string text = ops_trace(300, 1000, "");
  for (bool compressed : {false, true}) {
    CAPTURE(compressed);
    std::string bytes = compressed ? gzip(text) : text;
    std::string fd_path;
    auto result = load_from_pipe(bytes, fd_path);
    REQUIRE(std::holds_alternative<Timeline>(result));
    CHECK(std::get<Timeline>(result).events.size() == 300);
  }
  // A stream that is no trace is refused from its first bytes, not read until the memory budget is full.
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "64MiB");
    auto result = ptadvise::load_trace_file(device);
    REQUIRE(std::holds_alternative<LoadError>(result));
    CHECK(std::get<LoadError>(result).message ==
          std::string(device) +
              ": the first bytes are neither JSON nor gzip (this does not look like a PyTorch profiler trace)");
  }
  // Binary data that starts with a bracket (as 1 in 128 random streams do) is refused from its first
  // bytes too, by the NUL bytes no JSON text holds, not read until the budget is spent.
  {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "64MiB");
    std::string binary = "{\"traceEvents\": [";
    for (int i = 0; i < (80 << 20) / 64; ++i) binary += std::string("\x01\x02\0\xff", 4) + std::string(60, 'x');
    std::string fd_path;
    auto result = load_from_pipe(binary, fd_path);
    REQUIRE(std::holds_alternative<LoadError>(result));
    CHECK(std::get<LoadError>(result).message ==
          fd_path + ": the first bytes are neither JSON nor gzip (this does not look like a PyTorch profiler trace)");
  }
  // "-" is stdin.
  const std::string path = temp_path("stdin.json");
  write_file(path, text);
  std::string command = std::string(PTADVISE_BINARY) + " summary --format json - < " + path + " > " + path + ".out";
  CHECK(std::system(command.c_str()) == 0);
  std::ifstream out(path + ".out");
  std::string json((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  CHECK(json.find("\"<stdin>\"") != std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".out");
}

TEST_CASE("hostile: inputs beyond the memory budget are refused with one line, not an abort") {
  TraceBuilder trace;
  for (int i = 0; i < 50000; ++i) trace.cpu_op("op", 10 * i, 5);
  std::string text = trace.json();
  std::string bomb = gzip(text);
  REQUIRE(bomb.size() < 800 * 1024);
  const std::string path = temp_path("budget.json");
  write_file(path, text);
  write_file(path + ".gz", bomb);
  {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "1MiB");
    auto plain = ptadvise::load_trace_file(path);
    REQUIRE(std::holds_alternative<LoadError>(plain));
    CHECK(std::get<LoadError>(plain).message.find(path + ": the trace needs about ") == 0);
    CHECK(std::get<LoadError>(plain).message.find("PTADVISE_MEMORY_LIMIT") != std::string::npos);
    auto inflated = ptadvise::load_trace_file(path + ".gz");
    REQUIRE(std::holds_alternative<LoadError>(inflated));
    CAPTURE(std::get<LoadError>(inflated).message);
    CHECK(std::get<LoadError>(inflated).message.find("gzip data inflates beyond 819 KiB, more than this process can "
                                                     "hold in memory") != std::string::npos);
  }
  {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "64MiB");
    CHECK(std::holds_alternative<Timeline>(ptadvise::load_trace_file(path + ".gz")));
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".gz");
}
