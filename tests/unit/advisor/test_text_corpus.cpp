// The default text report on every trace of ../shared/traces at 80 columns: at most four lines per
// finding, no line wider than 80 columns, every shipped rule's finding in its short form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "corpus_traces.h"
#include "ptadvise/advisor.h"
#include "temp_dir.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

TEST_CASE("corpus: the default text report gives each finding at most 4 lines of at most 80 columns") {
  // Under the sanitizers, the traces of up to 1 MiB: the layout is the plain build's to check.
  if (!ptadvise::testing::corpus_traces()) return;
  const std::vector<std::filesystem::path> traces = ptadvise::testing::corpus_trace_files();
  setenv("COLUMNS", "80", 1);  // what a pipe gets anyway; set so that a caller's COLUMNS does not count
  size_t findings = 0, lines_in_findings = 0, most_lines = 0;
  for (const std::filesystem::path& trace : traces) {
    CAPTURE(trace.string());
    ptadvise::CheckOptions options;
    options.traces = {trace.string()};
    options.exit_zero = true;
    options.accept_partial = true;
    options.threads = 1;
    std::ostringstream out, err;
    REQUIRE(ptadvise::run_check(options, out, err) == 0);
    std::istringstream text(out.str());
    size_t in_finding = 0;  // lines of the finding being read, 0 outside findings
    auto close = [&] {
      if (in_finding == 0) return;
      ++findings;
      lines_in_findings += in_finding;
      most_lines = std::max(most_lines, in_finding);
      in_finding = 0;
    };
    for (std::string line; std::getline(text, line);) {
      CAPTURE(line);
      CHECK(ptadvise::testing::columns(line) <= 80);
      if (line.starts_with("#") && line.find('[') != std::string::npos) {
        close();
        in_finding = 1;
        // One saving, in the title; the message line below carries the cost.
        CHECK((line.find(": saves ~") != std::string::npos || line.find(": no step time to save") != std::string::npos));
      } else if (line.empty()) {
        close();
      } else if (in_finding > 0) {
        ++in_finding;
        CHECK(in_finding <= 4);
        CHECK(line.find("saves ~") == std::string::npos);
      }
    }
    close();
  }
  unsetenv("COLUMNS");
  // The corpus has findings on most traces: an empty count means the parse broke (41 findings on the
  // traces of up to 1 MiB, which the sanitizer build reads).
  CHECK(findings > (ptadvise::testing::kSanitizerBuild ? 35 : 50));
  MESSAGE(findings << " findings, " << static_cast<double>(lines_in_findings) / static_cast<double>(findings)
                   << " lines each on average, at most " << most_lines);
}

TEST_SUITE_END();
