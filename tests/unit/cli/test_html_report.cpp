// The HTML report of real corpus traces, rendered by Debian's headless Chromium (tests/tools/
// browser_check.py): no console error, no failed or outside request, every chart drawn, every finding of
// the JSON output on the page, usable at 1280 and 390 px. Skips visibly without the corpus, Chromium or
// python3-websocket (scripts/install-deps.sh --test installs both).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../advisor/python_check.h"
#include "../advisor/temp_dir.h"
#include "cli_run.h"
#include "corpus_traces.h"

namespace {

using ptadvise::testing::ptadvise_cli;
using ptadvise::testing::read_file;
using ptadvise::testing::Run;
using ptadvise::testing::TempDir;

const std::string kBrowserCheck = PTADVISE_SOURCE_DIR "/tests/tools/browser_check.py";

bool browser_available() {
  if (!std::filesystem::is_directory(ptadvise::testing::corpus_dir())) {
    MESSAGE("skipped: the trace corpus " << ptadvise::testing::corpus_dir() << " is not there");
    return false;
  }
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: chromium is not installed (scripts/install-deps.sh --test)");
    return false;
  }
  if (!ptadvise::testing::python_has("websocket")) {
    MESSAGE("skipped: python3-websocket is not installed (scripts/install-deps.sh --test)");
    return false;
  }
  return true;
}

// Writes the HTML and the JSON of the same run, then renders the HTML.
void check_in_browser(const TempDir& dir, const std::string& inputs, const std::string& expect_charts,
                      const std::string& screenshot = "") {
  Run run = ptadvise_cli("check --exit-zero --format json --output html=report.html " + inputs, dir.path());
  REQUIRE(run.exit_code == 0);
  dir.write("check.json", run.out);
  const std::string html = read_file(dir.file("report.html"));
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // Self-contained: nothing to fetch.
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("<link ") == std::string::npos);
  std::string args = dir.file("report.html") + " " + dir.file("check.json") + " --expect-charts " + expect_charts;
  if (!screenshot.empty()) args += " --screenshot '" + screenshot + "'";
  CHECK(ptadvise::testing::run_python_file(kBrowserCheck, args) == 0);
}

}  // namespace

TEST_CASE("html report: real traces render in headless Chromium with every chart and finding") {
  if (!browser_available()) return;
  // A training trace with findings, a GPU inference trace, and an AMD trace.
  for (const char* name : {"TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
                           "kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
                           "HTA__tests__data__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"}) {
    CAPTURE(name);
    TempDir dir;
    check_in_browser(dir, "'" + ptadvise::testing::corpus_dir() + name + "'", "steps,kernels,cpu-ops");
  }
}

TEST_CASE("html report: a job of two ranks gets the rank x metric heatmap; the README screenshot") {
  if (!browser_available()) return;
  TempDir dir;
  std::filesystem::create_directories(dir.file("job"));
  std::filesystem::create_symlink(ptadvise::testing::corpus_dir() + "HTA__tests__data__timeline_analysis__sampled_rank-0.json.gz",
                                  dir.file("job/rank-0.json.gz"));
  std::filesystem::create_symlink(ptadvise::testing::corpus_dir() + "HTA__tests__data__trace_filter__sampled_rank-1.json.gz",
                                  dir.file("job/rank-1.json.gz"));
  // PTADVISE_SCREENSHOT=docs/report.png refreshes the README's picture from this very run.
  const char* screenshot = std::getenv("PTADVISE_SCREENSHOT");
  check_in_browser(dir, "'" + dir.file("job") + "'", "ranks,steps,idle,kernels,cpu-ops", screenshot ? screenshot : "");
}

TEST_CASE("html report: `ptadvise report TRACE -o FILE` writes the same page as check --output html=FILE") {
  TempDir dir;
  const std::string trace = PTADVISE_SOURCE_DIR "/testdata/scenarios/02_assert_on_gpu_tensor.json.gz";
  Run report = ptadvise_cli("report '" + trace + "' -o page.html", dir.path());
  CHECK(report.exit_code == 0);
  CHECK(report.out.empty());
  CHECK(report.err == "ptadvise: wrote page.html\n");
  Run check = ptadvise_cli("check --exit-zero --output html=check.html '" + trace + "'", dir.path());
  CHECK(check.exit_code == 0);
  CHECK(read_file(dir.file("page.html")) == read_file(dir.file("check.html")));
  Run missing = ptadvise_cli("report -o page.html", dir.path());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.rfind("ptadvise: error: ", 0) == 0);
}
