// libFuzzer harness for `ptadvise merge`, the other way untrusted input enters: a rank digest written on
// another machine. The bytes are one rank's digest, merged with a valid digest of the job's other rank
// (merge_partner.json) through the command itself: digest parsing, job grouping, the job analysis and
// rules, the per-rank findings, and every report format on stdout and in files. Any crash, sanitizer
// report, hang or leak is a bug, and so is output a terminal or a CI log would act on.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ci_log_safety.h"
#include "ptadvise/advisor.h"

namespace {

const std::string& work_directory() {
  static const std::string directory = [] {
    char name[] = "/tmp/ptadvise-fuzz-merge-XXXXXX";
    if (mkdtemp(name) == nullptr) __builtin_trap();
    return std::string(name);
  }();
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
  for (const char* format : {"json", "sarif", "github", "junit", "markdown", "html"}) {
    options.outputs.emplace_back(format, dir + "/out." + format);
  }
  for (const char* format : {"text", "github"}) {
    options.format = format;
    std::ostringstream out, err;
    int code = ptadvise::run_check(options, out, err);
    if (code != 0 && code != 2) __builtin_trap();  // --exit-zero: clean, or one input error
    ptadvise::testing::trap_unless_ci_log_safe(out.str(), options.format == "github");
    ptadvise::testing::trap_unless_ci_log_safe(err.str());
    if (code == 2) break;  // the digest was refused: no need to print it twice
  }
  return 0;
}
