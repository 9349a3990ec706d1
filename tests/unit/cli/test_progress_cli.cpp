// The progress line: on a terminal (a real pseudo-terminal, from util-linux's `script`) it shows the bytes
// read of a large trace and the traces done of a directory; when stderr is a file or pipe, or CI is set,
// nothing. PTADVISE_PROGRESS_AFTER_MS=0 lifts the second of quiet so that a test-sized trace shows it.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"

using ptadvise::testing::read_file;
using ptadvise::testing::TempDir;

namespace {

// A CPU-only trace of `steps` ProfilerSteps with `ops_per_step` ops each (about 110 bytes per op).
void write_trace(const std::string& path, int steps, int ops_per_step) {
  std::ofstream out(path);
  out << "{\"traceEvents\": [\n";
  long ts = 1000;
  bool first = true;
  for (int s = 0; s < steps; ++s) {
    const long step_start = ts;
    const long step_dur = static_cast<long>(ops_per_step) * 12 + 10;
    out << (first ? "" : ",\n") << "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" << s
        << "\", \"pid\": 1, \"tid\": 1, \"ts\": " << step_start << ", \"dur\": " << step_dur << "}";
    first = false;
    for (int i = 0; i < ops_per_step; ++i) {
      out << ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": "
          << step_start + 5 + i * 12 << ", \"dur\": 10, \"args\": {\"External id\": " << s * ops_per_step + i << "}}";
    }
    ts += step_dur + 5;
  }
  out << "\n]}\n";
}

bool have_script() { return std::system("command -v script >/dev/null 2>&1") == 0; }

// Runs `ptadvise ARGS` inside `script`, on a pseudo-terminal; stdout goes to OUT, and stderr to the
// terminal unless `stderr_redirect` sends it elsewhere. Returns what the terminal showed.
std::string on_terminal(const TempDir& dir, const std::string& env, const std::string& args,
                        const std::string& stderr_redirect = "") {
  const std::string inner = "env -u CI -u GITHUB_ACTIONS TERM=xterm " + env + " '" PTADVISE_BINARY "' " + args + " >'" +
                            dir.file("out") + "'" + stderr_redirect;
  const std::string command = "script -qec \"" + inner + "\" /dev/null >'" + dir.file("tty") + "' 2>&1 </dev/null";
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  return read_file(dir.file("tty"));
}

}  // namespace

TEST_CASE("progress: shown on a terminal within a large trace and across the traces of a directory, never when piped") {
  if (!have_script()) {
    MESSAGE("skipped: util-linux's `script` is not installed");
    return;
  }
  TempDir dir;
  std::filesystem::create_directories(dir.file("job"));
  write_trace(dir.file("big.json"), 8, 40000);  // about 35 MB
  for (int rank = 0; rank < 3; ++rank) write_trace(dir.file("job/rank-" + std::to_string(rank) + ".json"), 4, 20000);

  const std::string shown = on_terminal(dir, "PTADVISE_PROGRESS_AFTER_MS=0", "check --exit-zero " + dir.file("big.json"));
  CAPTURE(shown);
  CHECK(shown.find("ptadvise: checking ") != std::string::npos);
  CHECK(shown.find(" MB of ") != std::string::npos);   // bytes read of the file's size
  CHECK(shown.find(" MB/s)") != std::string::npos);    // and the rate
  CHECK(shown.find(", ETA ") != std::string::npos);    // the time left, while bytes remain
  CHECK(shown.rfind("\r\x1b[K") != std::string::npos);  // erased at the end
  CHECK(read_file(dir.file("out")).find("ptadvise: checking") == std::string::npos);  // never on stdout
  CHECK(read_file(dir.file("out")).find("8 steps of") != std::string::npos);

  // summary (and diff) show the loading the same way.
  const std::string summary = on_terminal(dir, "PTADVISE_PROGRESS_AFTER_MS=0", "summary " + dir.file("big.json"));
  CAPTURE(summary);
  CHECK(summary.find("ptadvise: loading ") != std::string::npos);
  CHECK(summary.find(" MB of ") != std::string::npos);

  const std::string ranks = on_terminal(dir, "PTADVISE_PROGRESS_AFTER_MS=0", "check --exit-zero --threads 1 " + dir.file("job"));
  CAPTURE(ranks);
  CHECK(ranks.find("/3 traces, ") != std::string::npos);

  // stderr to a file (a pipe, a CI log): no progress, even on a terminal's stdout.
  const std::string piped = on_terminal(dir, "PTADVISE_PROGRESS_AFTER_MS=0", "check --exit-zero " + dir.file("big.json"),
                                        " 2>'" + dir.file("err") + "'");
  CHECK(piped.find("checking") == std::string::npos);
  CHECK(read_file(dir.file("err")).find("checking") == std::string::npos);
  // CI set, or a dumb terminal: none either.
  CHECK(on_terminal(dir, "CI=true PTADVISE_PROGRESS_AFTER_MS=0", "check --exit-zero " + dir.file("big.json")).find("checking") ==
        std::string::npos);
  CHECK(on_terminal(dir, "TERM=dumb PTADVISE_PROGRESS_AFTER_MS=0", "check --exit-zero " + dir.file("big.json")).find("checking") ==
        std::string::npos);
  // Without the test setting, short work shows nothing: the second of quiet. The trace is a few KB so
  // that a sanitizer build on a loaded machine still checks it well within the second.
  write_trace(dir.file("small.json"), 2, 20);
  CHECK(on_terminal(dir, "", "check --exit-zero " + dir.file("small.json")).find("checking") == std::string::npos);
}
