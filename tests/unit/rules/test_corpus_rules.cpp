// The shipped rules on every trace of ../shared/traces, reviewed by hand (docs/CORPUS_REVIEW.md says why each
// finding is right or not): the rule ids and savings per trace pinned in corpus_review.tsv, and the sites of
// the rules this review is about.
// Skips, with a message, when the corpus is not beside the project.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ptadvise/advisor.h"
#include "json_report.h"
#include "test_scenarios_support.h"
#include "corpus_traces.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

namespace ptadvise {
namespace {

using testing::CheckedTrace;
using testing::joined;

// The totals of docs/CORPUS_REVIEW.md, counted from corpus_review.tsv.
constexpr int kReviewedGpuTraces = 49;
constexpr int kTopRight = 49;
constexpr int kFindings = 71;
constexpr int kRealFindings = 70;

bool corpus_present() {
  if (std::filesystem::is_directory(ptadvise::testing::corpus_dir())) return true;
  MESSAGE("skipped: the trace corpus " << ptadvise::testing::corpus_dir() << " is not there");
  return false;
}

const Finding* first_of(const CheckedTrace& trace, const std::string& rule) {
  auto found = trace.of_rule(rule);
  return found.empty() ? nullptr : found.front();
}

std::string source_of(const Finding& finding) {
  if (!finding.site.source) return "";
  return finding.site.source->file + ":" + std::to_string(finding.site.source->line);
}

// One reviewed trace of tests/unit/rules/corpus_review.tsv (the table says what each column means).
struct PinnedFinding {
  std::string rule;
  double saving_ms = 0;
  char mark = 0;  // '!' judged not real in docs/CORPUS_REVIEW.md, '?' not reviewed yet
};

struct Reviewed {
  std::string file;
  std::string top;  // right, wrong, clean or n/a
  std::vector<PinnedFinding> findings;  // in rank order
  std::string why;
  int line = 0;
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) {
    if (separator != ' ' || !part.empty()) parts.push_back(part);
  }
  return parts;
}

const std::vector<Reviewed>& reviewed_traces() {
  static const std::vector<Reviewed> reviewed = [] {
    const std::string table = std::string(PTADVISE_SOURCE_DIR) + "/tests/unit/rules/corpus_review.tsv";
    std::ifstream in(table);
    REQUIRE_MESSAGE(in.good(), table << " is missing");
    std::vector<Reviewed> rows;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (line.empty() || line[0] == '#') continue;
      auto columns = split(line, '\t');
      REQUIRE_MESSAGE(columns.size() == 4, table << ":" << number << ": expected 4 tab-separated columns");
      Reviewed row{columns[0], columns[1], {}, columns[3], number};
      REQUIRE_MESSAGE((row.top == "right" || row.top == "wrong" || row.top == "clean" || row.top == "n/a"),
                      table << ":" << number << ": top is right, wrong, clean or n/a");
      if (columns[2] != "-") {
        for (const auto& item : split(columns[2], ' ')) {
          const auto equals = item.find('=');
          REQUIRE_MESSAGE(equals != std::string::npos, table << ":" << number << ": RULE=SAVING expected: " << item);
          PinnedFinding pinned{item.substr(0, equals), 0, 0};
          std::string value = item.substr(equals + 1);
          if (!value.empty() && (value.back() == '!' || value.back() == '?')) {
            pinned.mark = value.back();
            value.pop_back();
          }
          pinned.saving_ms = std::stod(value);
          row.findings.push_back(pinned);
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }();
  return reviewed;
}

// The tolerance of a pinned saving: 1% of it plus 2 µs (the table prints µs).
bool saving_matches(double got, double pinned) { return std::abs(got - pinned) <= 0.01 * pinned + 0.002; }

// One trace through the whole `check` pipeline, as `ptadvise check --format json` (the pins are written from
// it): the trace rules, the job rules that judge a lone rank, the ranking.
struct ReportedTrace {
  std::vector<std::pair<std::string, double>> findings;  // rule id, saving in ms per step; in rank order
  double step_ms = 0;
};

ReportedTrace reported_trace(const std::string& path) {
  const nlohmann::json trace = testing::checked_trace_json(path);
  ReportedTrace reported;
  reported.step_ms = trace.at("step_ms").get<double>();
  for (const auto& f : trace.at("findings")) {
    reported.findings.emplace_back(f.at("rule_id").get<std::string>(), f.at("saving_ms_per_step").get<double>());
  }
  return reported;
}

TEST_CASE("corpus: every reviewed trace gets exactly its reviewed findings, savings within 1% + 2 us") {
  if (!corpus_present()) return;
  for (const auto& row : reviewed_traces()) {
    CAPTURE(row.file);
    CAPTURE(row.line);
    const ReportedTrace trace = reported_trace(ptadvise::testing::corpus_dir() + row.file);
    std::multiset<std::string> pinned_ids, got_ids;
    for (const auto& pinned : row.findings) {
      CHECK_MESSAGE(pinned.mark != '?', row.file << ": " << pinned.rule << " is not reviewed yet");
      pinned_ids.insert(pinned.rule);
    }
    for (const auto& [id, saving] : trace.findings) got_ids.insert(id);
    CHECK_MESSAGE(got_ids == pinned_ids, row.file << ": got " << joined(got_ids) << ", reviewed " << joined(pinned_ids));
    if (!row.findings.empty() && !trace.findings.empty()) {
      CHECK_MESSAGE(trace.findings.front().first == row.findings.front().rule,
                    row.file << ": the top finding is " << trace.findings.front().first);
    }
    // The n-th finding of a rule (in rank order) against the n-th pinned one of that rule.
    std::map<std::string, std::vector<double>> got;
    for (const auto& [id, saving] : trace.findings) got[id].push_back(saving);
    std::map<std::string, size_t> seen;
    for (const auto& pinned : row.findings) {
      const auto& savings = got[pinned.rule];
      const size_t index = seen[pinned.rule]++;
      if (index >= savings.size()) continue;  // reported above as a different set
      CHECK_MESSAGE(saving_matches(savings[index], pinned.saving_ms),
                    row.file << ": " << pinned.rule << " saves " << savings[index] << " ms per step, pinned "
                             << pinned.saving_ms);
    }
    // No finding, and not all of them together, may save more than the step.
    double total = 0;
    for (const auto& finding : trace.findings) {
      const auto& id = finding.first;  // named, not bound: CHECK_MESSAGE's lambda (clang < 16)
      const double saving = finding.second;
      CHECK_MESSAGE(saving <= trace.step_ms + 1e-6,
                    row.file << ": " << id << " saves " << saving << " ms of a " << trace.step_ms << " ms step");
      total += saving;
    }
    CHECK_MESSAGE(total <= trace.step_ms * 1.0001 + 1e-6,
                  row.file << ": the findings save " << total << " ms of a " << trace.step_ms << " ms step");
  }
}

TEST_CASE("corpus: the review covers every shared trace and its totals are the documented ones") {
  if (!corpus_present()) return;
  std::set<std::string> reviewed;
  int gpu_traces = 0, top_right = 0, findings = 0, real = 0;
  for (const auto& row : reviewed_traces()) {
    reviewed.insert(row.file);
    if (row.top != "n/a") ++gpu_traces;
    if (row.top == "right" || row.top == "clean") ++top_right;
    for (const auto& pinned : row.findings) {
      ++findings;
      if (pinned.mark == 0) ++real;
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(ptadvise::testing::corpus_dir())) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json") || name.ends_with(".json.gz")) CHECK_MESSAGE(reviewed.count(name) == 1, name << " is not reviewed");
  }
  MESSAGE("top finding right on " << top_right << " of " << gpu_traces << " traces with GPU activity; " << real << " of "
                                  << findings << " findings real");
  // docs/CORPUS_REVIEW.md states these totals; update both together.
  CHECK(gpu_traces == kReviewedGpuTraces);
  CHECK(top_right == kTopRight);
  CHECK(findings == kFindings);
  CHECK(real == kRealFindings);
}

TEST_CASE("corpus: resnet50 with num_workers=0 stalls in the loader, its num_workers=4 twin does not") {
  if (!corpus_present() || !testing::shipped("PTA106")) return;
  for (const char* sample : {"kineto__plugin__samples__", "kineto__tb_plugin__samples__"}) {
    CheckedTrace workers0 = testing::check_trace(ptadvise::testing::corpus_dir() + sample + "resnet50_num_workers_0__worker0.pt.trace.json.gz");
    CheckedTrace workers4 = testing::check_trace(ptadvise::testing::corpus_dir() + sample + "resnet50_num_workers_4__worker0.pt.trace.json.gz");
    const Finding* stall = first_of(workers0, "PTA106");
    REQUIRE(stall != nullptr);
    CHECK(stall->site.op == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    CHECK(workers4.of_rule("PTA106").empty());
  }
}

TEST_CASE("corpus: resnet50's batch copy, zero_grad and SGD of PyTorch 1.8") {
  if (!corpus_present()) return;
  const std::string path = ptadvise::testing::corpus_dir() + "kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz";
  CheckedTrace trace = testing::check_trace(path);
  // The step is host-bound: faster GPU work can take at most 9.1 ms off it, and PTA105's fp32 convolutions
  // claim all of that first, so the pageable copies have nothing left to save: they are reported (1.6 ms on
  // their own passes the floor) with nothing, and fail no gate. The replay of the fp32 fix does not shorten
  // the step at all (the loop waits for its loader and host work): that is its saving.
  const Finding* precision = first_of(trace, "PTA105");
  REQUIRE(precision != nullptr);
  CHECK(precision->saving_ms_per_step == 0);
  CHECK(precision->saving_method.find("Limited to 9.11 of ") != std::string::npos);
  CHECK(precision->saving_method.find("The step ledger gives it 9.107 ms per step; the replay shortens the step by "
                                      "0.000 ms") != std::string::npos);
  const Finding* shared = first_of(trace, "PTA107");
  REQUIRE(shared != nullptr);
  CHECK(shared->saving_ms_per_step == 0);
  CHECK(shared->saving_method.find("Limited to 0 of 1.62 ms per step") != std::string::npos);
  CHECK(shared->saving_method.find("Earlier findings claimed what it would save on its own") != std::string::npos);
  CHECK(shared->saving_ms_per_step < shared->noise_floor_ms);  // below its floor: it fails no gate (ranking.cpp)
  // Without that finding (its threshold out of reach) they get their share of the bound:
  // images (19.3 MB) and targets (256 B) from pageable memory, 2.3 ms of copies per 212 ms step.
  CheckedTrace without_precision = testing::check_trace(path, {{"PTA105", {{"min_matmul_share_pct", 1000}}}});
  const Finding* pageable = first_of(without_precision, "PTA107");
  REQUIRE(pageable != nullptr);
  CHECK(pageable->site.op == "aten::copy_");
  CHECK(pageable->count_per_step == doctest::Approx(2.0));
  CHECK(pageable->time_ms_per_step == doctest::Approx(2.31).epsilon(0.01));
  // The ledger gives them 70% of their time; pinned and asynchronous they shorten the step by 0.112 ms.
  CHECK(pageable->saving_method.find("The step ledger gives it 1.617 ms per step") != std::string::npos);
  CHECK(1.617 == doctest::Approx(0.7 * pageable->time_ms_per_step).epsilon(0.01));
  CHECK(pageable->saving_ms_per_step == doctest::Approx(0.1123).epsilon(0.01));
  // .to(device) without non_blocking (cudaMemcpyAsync then cudaStreamSynchronize) and zero_grad's 161 in-place
  // zeroings are real, but save 0.25 ms of a 215 ms step each: below the noise floor.
  CHECK(first_of(trace, "PTA108") == nullptr);
  CHECK(first_of(trace, "PTA109") == nullptr);
  // 161 parameter tensors updated with 3 kernels each
  const Finding* single_tensor = first_of(trace, "PTA110");
  REQUIRE(single_tensor != nullptr);
  CHECK(single_tensor->count_per_step == doctest::Approx(483.0));
}

TEST_CASE("corpus: sites with Python stacks point at the library lines that cause them") {
  if (!corpus_present()) return;
  CheckedTrace qwen = testing::check_trace(ptadvise::testing::corpus_dir() + "TraceLens__tests__traces__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
  const Finding* harness = first_of(qwen, "PTA102");
  REQUIRE(harness != nullptr);
  CHECK(harness->site.op == "cudaDeviceSynchronize");
  CHECK(source_of(*harness) == "moca/library/profiling/profile.py:34");

  CheckedTrace timesformer = testing::check_trace(
      ptadvise::testing::corpus_dir() + "TraceLens__tests__traces__h100__facebook_timesformer-base-finetuned-k400__1016002.json.gz");
  // The harness's syncs are not charged for the decoding and preprocessing that follow them: those are
  // host-bound CPU work at their own lines.
  CHECK(timesformer.of_rule("PTA102").empty());
  std::set<std::string> host_work;
  for (const Finding* finding : timesformer.of_rule("PTA121")) host_work.insert(source_of(*finding));
  CHECK(host_work == std::set<std::string>{"transformers/image_transforms.py:390", "transformers/image_transforms.py:93",
                                           "transformers/pipelines/video_classification.py:174"});
  const Finding* normalize = first_of(timesformer, "PTA121");
  REQUIRE(normalize != nullptr);
  CHECK(normalize->saving_ms_per_step == doctest::Approx(105.0).epsilon(0.01));
  const Finding* unaligned = first_of(timesformer, "PTA117");
  REQUIRE(unaligned != nullptr);
  CHECK(unaligned->site.op == "aten::bmm");  // attention over 3137 tokens: [96, 64, 3137] operands
  CHECK(unaligned->count_per_step == doctest::Approx(24.0));
  CHECK(source_of(*unaligned) == "transformers/models/timesformer/modeling_timesformer.py:200");
}

}  // namespace
}  // namespace ptadvise

TEST_SUITE_END();
