// Names from a trace never act on a terminal or a CI log: control characters, forged `::error` lines,
// `##[command]`s, in every printer, however the text report wraps them.
#include <doctest/doctest.h>

#include <sstream>
#include <limits>
#include <string>

#include "ci_log_safety.h"
#include "ptadvise/advisor.h"
#include "ptadvise/visible_text.h"
#include "sample_report.h"

using namespace ptadvise;
using ptadvise::testing::ci_log_problems;

namespace {

std::string printed_safely(const Report& report, OutputFormat format, size_t width = 80) {
  std::ostringstream out;
  PrintOptions options;
  options.width = width;
  print_report(report, format, out, options);
  return out.str();
}

std::string joined(const std::vector<std::string>& problems) {
  std::string text;
  for (const auto& p : problems) text += p + "\n";
  return text;
}

}  // namespace

TEST_CASE("visible text: control characters and CI log commands are escaped, C++ names are not") {
  CHECK(visible_text("a\x1b[31m\rb\x07\x7f") == "a\\x1b[31m\\x0db\\x07\\x7f");
  CHECK(visible_text("x\n::error file=a::pwned") == "x\\x0a:\\x3aerror file=a::pwned");
  CHECK(visible_text("x\n::error", /*keep_newlines=*/true) == "x\n:\\x3aerror");
  CHECK(visible_text("::error file=a::pwned") == ":\\x3aerror file=a::pwned");
  CHECK(visible_text("kernel ::warning ::x") == "kernel :\\x3awarning :\\x3ax");
  CHECK(visible_text("a##[error]b ##vso[task.logissue]c ##teamcity[x]") ==
        "a#\\x23[error]b #\\x23vso[task.logissue]c #\\x23teamcity[x]");
  CHECK(visible_text("csi \xc2\x9b" "31m") == "csi \\u009b31m");
  // Real names stay as they are.
  for (const char* name : {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
                           "aten::copy_", "##", "#1 step", "nccl:all_reduce", "a ## b", "std::vector<int>::size"}) {
    CHECK(visible_text(name) == name);
  }
}

TEST_CASE("printers: a name with a newline and a CI command forges nothing in any format") {
  Report report = testing::sample_report();
  const std::string hostile = "x\n::error file=a::pwned\x1b[31m\r ##[error]legacy \xc2\x9b";
  Finding& f = report.traces[0].findings[0];
  f.message = "copied " + hostile;
  f.short_message = f.message;
  f.fix = "fix " + hostile;
  f.site.op = hostile;
  f.site.op_chain = {"ProfilerStep#3", hostile, "aten::copy_"};
  f.site.source = SourceLocation{"train.py\n::error file=b::pwned", 42, hostile};
  f.evidence[0].event = hostile;
  report.traces[0].path = "run/" + hostile + ".json";
  report.traces[0].device = hostile;
  // A merged rank digest is as untrusted as a trace: rule ids and names, and the coverage reasons.
  f.rule_id = "PTA1" + hostile;
  f.rule_name = "name " + hostile;
  report.traces[0].coverage.not_run.emplace_back("PTA9" + hostile, "reason " + hostile);
  f.evidence[0].file_ts_ns = std::numeric_limits<int64_t>::min();  // printed with its sign, no overflow
  for (auto format : {OutputFormat::Text, OutputFormat::Json, OutputFormat::Sarif, OutputFormat::Github,
                      OutputFormat::Junit, OutputFormat::Markdown}) {
    CAPTURE(to_string(format));
    const std::string text = printed_safely(report, format);
    CHECK(text.find("pwned") != std::string::npos);  // the names are shown, made harmless
    CHECK(joined(ci_log_problems(text, format == OutputFormat::Github)) == "");
    if (format == OutputFormat::Markdown) CHECK(text.find("ts -9223372036854775.808 us") != std::string::npos);
  }
}

TEST_CASE("text report: a long name split over lines never puts `::` at the start of a line") {
  // The split falls anywhere in the word as the prefix grows; every position is tried.
  for (size_t pad = 0; pad < 90; ++pad) {
    Report report = testing::sample_report();
    report.traces[0].findings.resize(1);
    report.traces[0].new_finding.resize(1);
    Finding& f = report.traces[0].findings[0];
    f.message = std::string(pad, 'A') + "::error file=a::pwned" + std::string(200, 'B');
    f.short_message = f.message;
    CAPTURE(pad);
    CHECK(joined(ci_log_problems(printed_safely(report, OutputFormat::Text, 60))) == "");
  }
}
