// libFuzzer harness for `ptadvise merge`, the other way untrusted input enters: a rank digest written on
// another machine. The bytes are one rank's digest, merged with a valid digest of the job's other rank
// (merge_partner.json) through the command itself: digest parsing, job grouping, the job analysis and
// rules, the per-rank findings, and every report format on stdout and in files. Any crash, sanitizer
// report, hang or leak is a bug, and so is output a terminal or a CI log would act on.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ci_log_safety.h"
#include "ptadvise/advisor.h"

namespace {

// The report files go to memory (/dev/shm, a tmpfs) when there is one: they are still written the way
// `--output` writes them (a temporary file, fsync, rename, fsync of the directory), but fsync on a tmpfs
// returns at once. On a disk, the 12 to 24 fsyncs of one execution took more than a second.
const std::string& work_directory() {
  static const std::string directory = [] {
    for (std::string parent : {"/dev/shm", "/tmp"}) {
      std::string name = parent + "/ptadvise-fuzz-merge-XXXXXX";
      if (mkdtemp(name.data()) != nullptr) return name;
    }
    __builtin_trap();
  }();
  // Registered after `directory` is built, so run before it is destroyed. It is memory: give it back.
  static const bool removed_at_exit = std::atexit([] { std::filesystem::remove_all(work_directory()); }) == 0;
  (void)removed_at_exit;
  return directory;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = work_directory();
  const std::string digest = dir + "/rank.json";
  std::ofstream(digest, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                   static_cast<std::streamsize>(size));
  ptadvise::CheckOptions options;
  options.inputs_are_digests = true;
  options.traces = {digest, PTADVISE_FUZZ_MERGE_PARTNER};
  options.exit_zero = true;
  options.threads = 1;
  // One run prints every format: github on stdout, the others (text too) in files. The text printed to
  // a file is the text stdout gets when it is not a terminal (80 columns, no colour): one run checks
  // what two runs, text and github on stdout, used to, and loads the rules once instead of twice.
  options.format = "github";
  for (const char* format : {"text", "json", "sarif", "github", "junit", "markdown", "html"}) {
    options.outputs.emplace_back(format, dir + "/out." + format);
  }
  std::ostringstream out, err;
  int code = ptadvise::run_check(options, out, err);
  if (code != 0 && code != 2) __builtin_trap();  // --exit-zero: clean, or one input error
  ptadvise::testing::trap_unless_ci_log_safe(out.str(), true);
  ptadvise::testing::trap_unless_ci_log_safe(err.str());
  if (code == 0) {
    std::ifstream file(dir + "/out.text", std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    if (text.str().empty()) __builtin_trap();  // a clean run writes its text report
    ptadvise::testing::trap_unless_ci_log_safe(text.str());
  }
  return 0;
}
