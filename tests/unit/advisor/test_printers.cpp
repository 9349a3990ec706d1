#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "ptadvise/advisor.h"
#include "python_check.h"
#include "sample_report.h"
#include "temp_dir.h"

using namespace ptadvise;

namespace {
std::string printed(const Report& report, OutputFormat format, bool color = false) {
  std::ostringstream out;
  PrintOptions options;
  options.color = color;
  print_report(report, format, out, options);
  return out.str();
}
}  // namespace

TEST_CASE("text report: at most four lines per finding, one cost and one saving, wrapped to the width") {
  Report report = testing::sample_report();
  report.traces[0].findings.resize(3);
  report.traces[0].new_finding.resize(3);
  report.suppressed = 1;
  CHECK(printed(report, OutputFormat::Text) ==
        "ptadvise: run/trace.json\n"
        "  NVIDIA A100-SXM4-80GB, 8 steps of 25.000 ms (ProfilerStep markers)\n"
        "  GPU busy 61.5%\n"
        "  coverage: 19 of 20 rules checked this trace; 1 could not: no Python stacks\n"
        "    (PTA111)\n"
        "  recoverable: ~5.80 ms/step (23.2%) from 3 findings, no time counted twice\n"
        "\n"
        "#1 warning[PTA101] item-sync-in-step: saves ~2.50 ms/step (10.0%)\n"
        "    .item() syncs once per step; GPU idle 2.5 ms/step\n"
        "  --> train.py:42 in train_step (aten::item > aten::_local_scalar_dense)\n"
        "   = help: keep the value on the device; log it every N steps\n"
        "\n"
        "#2 warning[PTA001] h2d-copy-every-step: saves ~1 ms/step (4.0%)\n"
        "    a 4 KiB host tensor is copied to the GPU in every step\n"
        "  --> aten::to > aten::_to_copy > aten::copy_ > Memcpy HtoD (Pageable -> Device)\n"
        "   = help: create the tensor once on the device\n"
        "\n"
        "#3 info[PTA103] tiny-kernel-storm: saves ~1 ms/step (4.0%)\n"
        "    62% of kernels run for less than 10 us\n"
        "   = help: fuse kernels with torch.compile\n"
        "\n"
        "Found 3 findings, 2 failing (--fail-on warning). 1 suppressed by `# ptadvise:\n"
        "ignore` comments.\n");
}

TEST_CASE("text report: the header gives the median step when it is far from the mean") {
  Report report = testing::sample_report();
  auto header = [&report] {
    const std::string text = printed(report, OutputFormat::Text);
    const size_t line = text.find('\n') + 1;
    return text.substr(line, text.find('\n', line) - line);
  };
  Summary summary;
  summary.steady_steps = 8;
  summary.median_step_ms = 12.5;  // every few steps one takes far longer (an evaluation pass)
  report.traces[0].summary = summary;
  CHECK(header() == "  NVIDIA A100-SXM4-80GB, 8 steps of 25.000 ms on average, median 12.500 ms");
  report.traces[0].summary->median_step_ms = 24.0;  // within a quarter of the mean: the mean says it
  CHECK(header() == "  NVIDIA A100-SXM4-80GB, 8 steps of 25.000 ms (ProfilerStep markers)");
  report.traces[0].summary->median_step_ms = 12.5;
  report.traces[0].summary->steady_steps = 2;  // too few steps for a median to mean more than the mean
  CHECK(header() == "  NVIDIA A100-SXM4-80GB, 8 steps of 25.000 ms (ProfilerStep markers)");
}

TEST_CASE("text report: a line that would wrap gets the shorter text, never a cut number") {
  Report report = testing::sample_report();
  report.traces[0].findings.resize(1);
  report.traces[0].new_finding.resize(1);
  Finding& f = report.traces[0].findings[0];
  f.site.source = SourceLocation{"/home/someone/projects/a/very/deep/checkout/of/the/model/code/train.py", 1234,
                                 "a_rather_long_function_name"};
  f.fix = "keep the value on the device and read it only every N steps, for example when logging the loss";
  std::ostringstream out;
  PrintOptions options;
  options.width = 60;
  print_text(report, out, options);
  CHECK(out.str().find("\n\n"
                       "#1 warning[PTA101]: saves ~2.50 ms/step (10.0%)\n"
                       "    .item() syncs once per step; GPU idle 2.5 ms/step\n"
                       "  --> \u2026/train.py:1234 (\u2026 > aten::_local_scalar_dense)\n"
                       "   = help: log it every N steps\n"
                       "\n") != std::string::npos);
}

TEST_CASE("text report: a job finding is located at its ranks, a folded per-rank finding at its event") {
  Report report = testing::sample_report();
  report.traces[0].findings.resize(2);
  report.traces[0].new_finding.resize(2);
  // A job rule's finding: its site is the ranks, with no evidence of its own.
  Finding& job = report.traces[0].findings[0];
  job.site = Site{};
  job.site.op = "all_reduce";
  job.site.detail = "rank 3";
  job.ranks = {3};
  job.evidence.clear();
  // A per-rank finding every rank had, folded: its site is an annotation (no CPU op chain).
  Finding& folded = report.traces[0].findings[1];
  folded.site = Site{};
  folded.site.op = "## preprocess ##";
  folded.site.detail = "## preprocess ##";
  folded.ranks = {0, 1};
  REQUIRE(!folded.evidence.empty());
  const std::string text = printed(report, OutputFormat::Text);
  CHECK(text.find("  --> all_reduce on rank 3\n") != std::string::npos);
  CHECK(text.find("  --> ## preprocess ##\n") != std::string::npos);
  CHECK(text.find("## preprocess ## on ## preprocess ##") == std::string::npos);
}

TEST_CASE("text and markdown reports: a job's wait columns say which steps they leave out") {
  Report report = testing::sample_report();
  JobTable job;
  job.directory = "run";
  job.ranks = 2;
  job.aligned_collectives = 7;
  job.unmatched_collectives = 1;
  job.rows = {{0, "rank-0.json", 72.66, 0.54, 35.85, 35.84, 0.0, 40.19, 0, 0, 0},
              {1, "rank-1.json", 72.73, 0.50, 0.71, 0.71, 0.0, 0.0, 0, 0, 100}};
  report.traces[0].job = job;
  const std::string note = "leave out the step whose collectives could not be compared";
  CHECK(printed(report, OutputFormat::Text).find(note) == std::string::npos);
  report.traces[0].job->uncompared_steps = 1;
  const std::string text = printed(report, OutputFormat::Text);
  CHECK(text.find("  wait and last% " + note.substr(0, 24)) != std::string::npos);
  CHECK(printed(report, OutputFormat::Markdown).find("_wait and last% " + note) != std::string::npos);
  report.traces[0].job->uncompared_steps = 3;
  CHECK(printed(report, OutputFormat::Markdown).find("leave out the 3 steps whose collectives") != std::string::npos);
}

TEST_CASE("text report: --verbose keeps every evidence item; --concise is one line per finding") {
  Report report = testing::sample_report();
  report.traces[0].findings.resize(2);
  report.traces[0].new_finding.resize(2);
  PrintOptions verbose;
  verbose.detail = TextDetail::Verbose;
  verbose.width = 200;
  std::ostringstream text;
  print_text(report, text, verbose);
  CHECK(text.str().find(
            "#1 warning[PTA101] item-sync-in-step: .item() blocks the host until the GPU catches up, every step\n"
            "  --> train.py:42 in train_step\n"
            "   = site: aten::item > aten::_local_scalar_dense\n"
            "   = cost: 2.500 ms per step (once per step, in 100% of steps)\n"
            "   = evidence: step 3, ts 1700000000123 us on pid 4242 tid 4242: aten::_local_scalar_dense (0.050 ms)\n"
            "   = evidence: step 4, ts 1700000025123 us on pid 4242 tid 4242: aten::_local_scalar_dense (0.052 ms)\n"
            "   = help: keep the value on the device; log it every N steps\n"
            "   = note: saves ~2.500 ms per step (10.0% of step time), confidence high; GPU idle after the sync, "
            "from the idle ledger\n\n") != std::string::npos);
  CHECK(text.str().find("   = detail: 4 KiB per copy\n") != std::string::npos);

  PrintOptions concise;
  concise.detail = TextDetail::Concise;
  std::ostringstream one;
  print_text(report, one, concise);
  CHECK(one.str() ==
        "train.py:42: warning[PTA101] item-sync-in-step: .item() blocks the host until the GPU catches up, every "
        "step (saves 2.500 ms/step, 10.0%)\n"
        "run/trace.json: warning[PTA001] h2d-copy-every-step: a 4 KiB host tensor is copied to the GPU in every step "
        "(saves 1.000 ms/step, 4.0%)\n"
        "\n"
        "Found 2 findings, 2 failing (--fail-on warning).\n");
}

TEST_CASE("text report: no line wider than the width, long words split rather than cut") {
  Report report = testing::sample_report();
  report.traces[0].findings[0].message =
      "a kernel named sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16 "
      "runs 123456.789 ms";
  report.traces[0].findings[0].short_message.clear();  // the default output shows the message then
  for (size_t width : {40u, 60u, 80u, 120u}) {
    CAPTURE(width);
    PrintOptions options;
    options.width = width;
    std::ostringstream text;
    print_text(report, text, options);
    std::istringstream lines(text.str());
    std::string joined;
    for (std::string line; std::getline(lines, line);) {
      CHECK(testing::columns(line) <= width);
      joined += line;
    }
    CHECK(joined.find("123456.789") != std::string::npos);  // numbers are never cut
  }
}

TEST_CASE("text report: control characters from trace names never reach the terminal raw") {
  Report report = testing::sample_report();
  report.traces[0].findings[0].message = "evil \x1b[2J\rname\x07 and \xc2\x9b" "31m";
  report.traces[0].findings[0].short_message = report.traces[0].findings[0].message;
  report.traces[0].findings[0].evidence[0].event = "ev\x1b]0;title\x07";
  for (TextDetail detail : {TextDetail::Concise, TextDetail::Default, TextDetail::Verbose}) {
    PrintOptions options;
    options.detail = detail;
    std::ostringstream text;
    print_text(report, text, options);
    CHECK(text.str().find('\x1b') == std::string::npos);
    CHECK(text.str().find('\r') == std::string::npos);
    CHECK(text.str().find('\x07') == std::string::npos);
    CHECK(text.str().find("\xc2\x9b") == std::string::npos);
    CHECK(text.str().find("evil \\x1b[2J\\x0dname\\x07 and \\u009b31m") != std::string::npos);
  }
  // GitHub annotations: a newline would start a forged ::error command; it is escaped, ESC made visible.
  report.traces[0].findings[0].message = "x\n::error file=a::forged\x1b";
  std::string github = printed(report, OutputFormat::Github);
  CHECK(github.find("\n::error file=a") == std::string::npos);
  CHECK(github.find("x%0A::error file=a::forged\\x1b") != std::string::npos);
}

TEST_CASE("text report: colour only when asked, baseline and stale entries") {
  Report report = testing::sample_report();
  CHECK(printed(report, OutputFormat::Text).find('\x1b') == std::string::npos);
  std::string colored = printed(report, OutputFormat::Text, true);
  // {fmt}'s styles: bold, then the foreground colour.
  CHECK(colored.find("\x1b[1m\x1b[33mwarning\x1b[0m") != std::string::npos);
  CHECK(colored.find("\x1b[1m\x1b[36minfo\x1b[0m") != std::string::npos);

  report.has_baseline = true;
  report.traces[0].new_finding[0] = false;
  report.stale.push_back({"00000000deadbeef", "PTA900", "gone-rule", "old.py:1 in f", 1.0});
  PrintOptions wide;
  wide.width = 200;
  std::ostringstream out;
  print_text(report, out, wide);
  std::string text = out.str();
  // Accepted findings are counted, not printed.
  CHECK(text.find("#1 warning[PTA101]") == std::string::npos);
  CHECK(text.find("Found 5 findings, 3 failing (--fail-on warning, not in the baseline). 1 accepted in the "
                  "baseline, not shown.\n"
                  "1 baseline entry no longer occurs (remove with --prune-baseline):\n"
                  "  00000000deadbeef PTA900 old.py:1 in f\n") != std::string::npos);

  Report clean;
  clean.traces.push_back(TraceReport{});
  clean.traces[0].path = "t.json";
  clean.traces[0].coverage.ran = 21;
  CHECK(printed(clean, OutputFormat::Text).find("No findings.\n") != std::string::npos);
  // Nothing found because no rule could look (a window of warm-up only): never "No findings".
  clean.traces[0].coverage.ran = 0;
  clean.traces[0].coverage.no_steady_state = 21;
  clean.traces[0].coverage.not_run = {{"PTA101", "no steady step"}};
  const std::string none = printed(clean, OutputFormat::Text);
  CHECK(none.find("No findings") == std::string::npos);
  CHECK(none.find("No rule could check the trace (see the coverage line).\n") != std::string::npos);
  const std::string markdown = printed(clean, OutputFormat::Markdown);
  CHECK(markdown.find("No findings") == std::string::npos);
  CHECK(markdown.find("No rule could check this trace") != std::string::npos);
}

TEST_CASE("json report carries ranks, savings, confidence, source and evidence") {
  // Written by nlohmann::json: parsed back here, so the test checks values rather than layout.
  Report report = testing::sample_report();
  const std::string text = printed(report, OutputFormat::Json);
  CHECK(text.back() == '\n');
  const auto json = nlohmann::json::parse(text);
  CHECK(json["findings_total"] == 5);
  CHECK(json["findings_failing"] == 4);
  const auto& trace = json["traces"][0];
  CHECK(trace["recoverable_ms_per_step"] == 5.8);
  CHECK(trace["recoverable_pct"] == 23.2);
  const auto& first = trace["findings"][0];
  CHECK(first["rank"] == 1);
  CHECK(first["rule_id"] == "PTA101");
  CHECK(first["source"] == nlohmann::json{{"file", "train.py"}, {"line", 42}, {"function", "train_step"}});
  CHECK(trace["findings"][1]["source"].is_null());
  CHECK(first["saving_ms_per_step"] == 2.5);
  CHECK(first["saving_pct"] == 10);
  CHECK(first["confidence"] == "high");
  CHECK(first["evidence"][0] == nlohmann::json{{"step", 3},
                                               {"ts_us", 1700000000123},
                                               {"dur_ms", 0.05},
                                               {"event", "aten::_local_scalar_dense"},
                                               {"track", "pid 4242 tid 4242"}});
  std::vector<int> ranks;
  for (const auto& f : trace["findings"]) ranks.push_back(f["rank"]);
  CHECK(ranks == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(trace["findings"][4]["fingerprint"] == first["fingerprint"].get<std::string>() + "-2");
  // Evidence keeps the file's own time base with its ns: ts 88511388202.755 µs stays exactly that.
  report.traces[0].findings[0].evidence[0].file_ts_ns = 88511388202755;
  CHECK(nlohmann::json::parse(printed(report, OutputFormat::Json))["traces"][0]["findings"][0]["evidence"][0]["ts_us"]
            .dump() == "88511388202.755");
}

TEST_CASE("sarif report validates against the SARIF 2.1.0 schema") {
  Report report = testing::sample_report();
  report.rules.push_back(RuleInfo{"PTA101", "item-sync-in-step", "A GPU-to-host sync inside the step",
                                  Severity::Warning, {"sync", "gpu"}, "keep values on the device",
                                  RuleDocs{"Finds .item() in steps", "The host waits", "x.item()", "log every N steps"},
                                  "rules.d/sync/item.yaml", {}, ""});
  report.has_baseline = true;
  report.traces[0].new_finding[1] = false;
  std::string sarif = printed(report, OutputFormat::Sarif);
  const auto results = nlohmann::json::parse(sarif)["runs"][0]["results"];
  CHECK(results[0]["partialFingerprints"]["ptadvise/v1"] == report.traces[0].findings[0].fingerprint);
  CHECK(results[0]["locations"][0]["physicalLocation"] ==
        nlohmann::json{{"artifactLocation", {{"uri", "train.py"}}}, {"region", {{"startLine", 42}}}});
  // No source line: the trace file, line 1.
  CHECK(results[1]["locations"][0]["physicalLocation"] ==
        nlohmann::json{{"artifactLocation", {{"uri", "run/trace.json"}}}, {"region", {{"startLine", 1}}}});
  CHECK(sarif.find("\"level\": \"note\"") != std::string::npos);  // info findings
  CHECK(sarif.find("\"baselineState\": \"unchanged\"") != std::string::npos);

  const std::string schema = PTADVISE_SHARED_DIR "/schemas/sarif-schema-2.1.0.json";
  if (!std::filesystem::exists(schema)) {
    MESSAGE("skipping SARIF schema validation: " << schema << " is absent");
    return;
  }
  if (!testing::python_has("jsonschema")) {
    MESSAGE("skipping SARIF schema validation: Debian's python3-jsonschema is not installed");
    return;
  }
  testing::TempDir dir;
  std::string path = dir.write("report.sarif", sarif);
  const std::string validate =
      "import json,jsonschema,sys; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))";
  CHECK(testing::run_python(validate, path + " " + schema) == 0);
  // The validator does reject a broken document, so the check above can fail.
  std::string broken = sarif;
  broken.replace(broken.find("\"version\": \"2.1.0\""), 18, "\"version\": \"9.9\"");
  std::string broken_path = dir.write("broken.sarif", broken);
  CHECK(testing::run_python(validate, broken_path + " " + schema + " 2>/dev/null") != 0);
}

TEST_CASE("github workflow commands escape data and properties") {
  CHECK(github_escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext");
  CHECK(github_escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A");
  // Terminal escapes, backspaces and C1 controls from trace names never reach the CI log raw.
  CHECK(github_escape_data("k\x1b[2Kfake\b\x7f\xc2\x9b!") == "k\\x1b[2Kfake\\x08\\x7f\\u009b!");
  CHECK(github_escape_data("caf\xc3\xa9") == "caf\xc3\xa9");  // other UTF-8 is text
  Report report = testing::sample_report();
  std::string out = printed(report, OutputFormat::Github);
  CHECK(out.rfind("::warning file=train.py,line=42,title=PTA101 item-sync-in-step (#1%2C ~2.500 ms per step)::"
                  ".item() blocks the host until the GPU catches up, every step (saves ~2.500 ms per step, 10.0%25 "
                  "of step time; confidence high). Fix: keep the value on the device; log it every N steps\n",
                  0) == 0);
  CHECK(out.find("::notice file=run/trace.json,line=1,title=PTA103 tiny-kernel-storm") != std::string::npos);
}

TEST_CASE("github output keeps the top 10 per level and skips baseline findings") {
  Report report = testing::sample_report();
  auto& findings = report.traces[0].findings;
  Finding base = findings[0];
  findings.clear();
  for (int i = 0; i < 12; ++i) {
    Finding f = base;
    f.saving_ms_per_step = 12 - i;
    f.site.source->line = 100 + i;
    findings.push_back(f);
  }
  rank_findings(findings);
  report.traces[0].new_finding.assign(12, true);
  report.traces[0].new_finding[0] = false;  // accepted: not annotated
  std::string out = printed(report, OutputFormat::Github);
  size_t warnings = 0;
  for (size_t pos = out.find("::warning "); pos != std::string::npos; pos = out.find("::warning ", pos + 1)) ++warnings;
  CHECK(warnings == 10);
  CHECK(out.find("line=100,") == std::string::npos);
  CHECK(out.find("line=101,") != std::string::npos);
  CHECK(out.find("line=110,") != std::string::npos);
  CHECK(out.find("line=111,") == std::string::npos);
  CHECK(out.find("::notice title=ptadvise::1 more findings are not annotated") != std::string::npos);
}

TEST_CASE("junit: a testsuite per trace, a testcase per rule, failures hold the findings") {
  Report report = testing::sample_report();
  report.traces[0].findings.resize(3);
  report.traces[0].new_finding.resize(3);
  report.traces[0].findings[1].message = "a <tensor> & \"more\"";
  CHECK(printed(report, OutputFormat::Junit) ==
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<testsuites name=\"ptadvise\" tests=\"3\" failures=\"2\">\n"
        "  <testsuite name=\"run/trace.json\" tests=\"3\" failures=\"2\" errors=\"0\" skipped=\"0\">\n"
        "    <testcase classname=\"ptadvise.PTA101\" name=\"PTA101 item-sync-in-step\">\n"
        "      <failure message=\"1 finding, ~2.500 ms per step\" type=\"PTA101\">#1 warning: .item() blocks the host "
        "until the GPU catches up, every step\n"
        "  at train.py:42 in train_step\n"
        "  saves ~2.500 ms per step\n"
        "  fix: keep the value on the device; log it every N steps\n"
        "</failure>\n"
        "    </testcase>\n"
        "    <testcase classname=\"ptadvise.PTA001\" name=\"PTA001 h2d-copy-every-step\">\n"
        "      <failure message=\"1 finding, ~1.000 ms per step\" type=\"PTA001\">#2 warning: a &lt;tensor&gt; &amp; "
        "\"more\"\n"
        "  at aten::to &gt; aten::_to_copy &gt; aten::copy_ &gt; Memcpy HtoD (Pageable -&gt; Device)\n"
        "  saves ~1.000 ms per step\n"
        "  fix: create the tensor once on the device\n"
        "</failure>\n"
        "    </testcase>\n"
        "    <testcase classname=\"ptadvise.PTA103\" name=\"PTA103 tiny-kernel-storm\">\n"
        "      <system-out>1 finding, ~1.000 ms per step (not failing)\n"
        "#3 info: 62% of kernels run for less than 10 us\n"
        "  at (whole trace)\n"
        "  saves ~1.000 ms per step\n"
        "  fix: fuse kernels with torch.compile\n"
        "</system-out>\n"
        "    </testcase>\n"
        "  </testsuite>\n"
        "</testsuites>\n");
}

TEST_CASE("markdown report: table and one section per finding") {
  Report report = testing::sample_report();
  report.traces[0].findings.resize(1);
  report.traces[0].new_finding.resize(1);
  report.traces[0].findings[0].message = "a | in the message";
  CHECK(printed(report, OutputFormat::Markdown) ==
        "# ptadvise report\n"
        "\n"
        "**1** finding, **1** failing (fail-on: warning).\n"
        "\n"
        "## `run/trace.json`\n"
        "\n"
        "NVIDIA A100-SXM4-80GB · 8 steps · step time **25.000 ms** · GPU busy **61.5%** · recoverable **~5.800 ms "
        "per step (23.2%)**\n"
        "\n"
        "_coverage: 19 of 20 rules checked this trace; 1 could not: no Python stacks (PTA111)_\n"
        "\n"
        "| # | rule | severity | where | saving per step | confidence |\n"
        "|---:|---|---|---|---:|---|\n"
        "| 1 | `PTA101` item-sync-in-step | warning | `train.py:42 in train_step` | 2.500 ms (10.0%) | high |\n"
        "\n"
        "### 1. PTA101 item-sync-in-step\n"
        "\n"
        "a \\| in the message\n"
        "\n"
        "- **Fix:** keep the value on the device; log it every N steps\n"
        "- **Estimate:** 2.500 ms per step, confidence high (GPU idle after the sync, from the idle ledger)\n"
        "- Evidence: step 3, ts 1700000000123 us on pid 4242 tid 4242: aten::_local_scalar_dense (0.050 ms)\n"
        "- Evidence: step 4, ts 1700000025123 us on pid 4242 tid 4242: aten::_local_scalar_dense (0.052 ms)\n"
        "\n");
}

TEST_CASE("output format names") {
  CHECK(parse_output_format("sarif") == OutputFormat::Sarif);
  CHECK(parse_output_format("md") == OutputFormat::Markdown);
  CHECK(!parse_output_format("xml"));
  CHECK(to_string(OutputFormat::Junit) == "junit");
  CHECK(relative_path("/a/b/c.py", "/a") == "b/c.py");
  CHECK(relative_path("/x/c.py", "/a") == "/x/c.py");
}

TEST_CASE("diff text: no line wider than the width; long kernel names lose their middle, numbers stay whole") {
  DiffReport diff;
  diff.base_path = "runs/base.json";
  diff.new_path = "runs/new.json";
  diff.base_step_ms = 10;
  diff.new_step_ms = 12.5;
  diff.step_change_pct = 25;
  const std::string kernel = "void cudnn::cnn::wgrad_alg0_engine<float, 512, 6, 5, 3, 3, 3, false, 512>(int, int, int, "
                             "float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int)";
  diff.kernels.push_back(TimeChange{kernel, 0.0, 3.156});
  std::ostringstream out;
  print_diff_text(diff, out, 80);
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) CHECK(testing::columns(line) <= 80);
  CHECK(out.str().find("\n  +3.156 ms  void cudnn::cnn::wgrad\u2026nsigned long long, int)  (0.000 -> 3.156 ms)\n") !=
        std::string::npos);
}
