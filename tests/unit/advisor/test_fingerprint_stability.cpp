// Fingerprints must stay equal across two recordings of the same program (real traces in ../shared).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>

#include "ptadvise/advisor.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "temp_dir.h"

using namespace ptadvise;

namespace {

// Two site-grouping rules without thresholds or noise floor, so both recordings report every site they contain.
const char* kCopyRule = R"(id: PTX902
name: copies-by-site
severity: info
tags: [test-memcpy]
summary: Every host-device copy site.
fix: none
docs: {what: a, why: b, example: c, fix: d}
thresholds:
  min_saving_ms: {value: 0, doc: every site}
  min_saving_pct: {value: 0, doc: every site}
select:
  copies: {kind: memcpy, in_step: true}
group: {select: copies, by: [op, kernel, source]}
message: "{site.op} {site.kernel}"
saving: {ms_per_step: time_ms, method: copy time, confidence: low}
)";
const char* kKernelRule = R"(id: PTX903
name: kernels-by-site
severity: info
tags: [test-kernels]
summary: Every kernel site.
fix: none
docs: {what: a, why: b, example: c, fix: d}
thresholds:
  min_saving_ms: {value: 0, doc: every site}
  min_saving_pct: {value: 0, doc: every site}
select:
  kernels: {kind: kernel, in_step: true}
group: {select: kernels, by: [op, kernel, source]}
message: "{site.op} {site.kernel}"
saving: {ms_per_step: time_ms, method: kernel time, confidence: low}
)";

std::vector<Finding> findings_of(const std::string& path, const RuleSet& rules) {
  auto loaded = load_trace_file(path);
  REQUIRE_MESSAGE(std::holds_alternative<Timeline>(loaded), path);
  const Timeline& timeline = std::get<Timeline>(loaded);
  Analysis analysis = analyze(timeline);
  auto findings = evaluate(rules, analysis);
  rank_findings(findings);
  return findings;
}

// What a finding is, spelled out (names normalised: `{lambda()#4}` in one PyTorch build is `#8` in another):
// the same key must give the same fingerprint whatever the op chain above it.
std::string raw_key(const Finding& f) {
  std::string key = f.rule_id + "|" + normalize_name(f.site.op) + "|" + normalize_name(f.site.kernel);
  if (f.site.source) key += "|" + f.site.source->file + "|" + f.site.source->function;
  return key;
}

}  // namespace

TEST_CASE("fingerprints are equal across recordings of the same program" * doctest::test_suite("corpus")) {
  const std::string traces = PTADVISE_SHARED_DIR "/traces/";
  if (!std::filesystem::exists(traces)) {
    MESSAGE("skipping: " << traces << " is absent (the real traces live beside the project)");
    return;
  }
  testing::TempDir dir;
  dir.write("rules/copies.yaml", kCopyRule);
  dir.write("rules/kernels.yaml", kKernelRule);
  auto loaded = load_rules({dir.file("rules")});
  REQUIRE_MESSAGE(std::holds_alternative<RuleSet>(loaded), std::get<RuleError>(loaded).message);
  const RuleSet& rules = std::get<RuleSet>(loaded);

  struct Pair {
    std::string a, b;
    size_t min_shared;
  };
  const std::vector<Pair> pairs = {
      {"kineto__plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz",
       "kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz", 100},
      {"kineto__plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz",
       "kineto__tb_plugin__samples__resnet50_num_workers_4__worker0.pt.trace.json.gz", 95},
      {"HTA__tests__data__trace_compare__base__base.json.gz", "HTA__tests__data__trace_compare__test__test.json.gz", 5},
  };
  for (const auto& pair : pairs) {
    CAPTURE(pair.a);
    auto a = findings_of(traces + pair.a, rules);
    auto b = findings_of(traces + pair.b, rules);
    std::map<std::string, std::string> b_by_print;
    std::map<std::string, std::set<std::string>> b_prints_by_key;
    for (const auto& f : b) {
      b_by_print[f.fingerprint] = raw_key(f);
      b_prints_by_key[raw_key(f)].insert(f.fingerprint);
    }
    size_t shared = 0;
    for (const auto& f : a) {
      CAPTURE(raw_key(f));
      if (b_by_print.count(f.fingerprint)) {
        ++shared;
        // One fingerprint means one site: rule, op, kernel and source agree.
        CHECK(b_by_print[f.fingerprint] == raw_key(f));
      } else {
        // A site of A without a twin in B must really be missing from B (another cuDNN algorithm, ...),
        // not the same site fingerprinted differently.
        CHECK(b_prints_by_key.count(raw_key(f)) == 0);
      }
    }
    CHECK(shared >= pair.min_shared);
    // The copy sites of a program do not depend on timing: all of them match.
    std::set<std::string> copies_a, copies_b;
    for (const auto& f : a) {
      if (f.rule_id == "PTX902") copies_a.insert(f.fingerprint);
    }
    for (const auto& f : b) {
      if (f.rule_id == "PTX902") copies_b.insert(f.fingerprint);
    }
    CHECK(!copies_a.empty());
    CHECK(copies_a == copies_b);
  }
}
