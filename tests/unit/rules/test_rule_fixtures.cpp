// Runs every shipped rule on the fixtures its `tests:` section declares (load -> analyze -> evaluate) and
// checks the exact findings; the meta-tests keep every rule documented and tested.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "shipped_rules.h"

namespace {

double field(const ptadvise::Finding& finding, const std::string& name) {
  if (name == "count_per_step") return finding.count_per_step;
  if (name == "time_ms_per_step") return finding.time_ms_per_step;
  if (name == "steps_present_pct") return finding.steps_present_pct;
  if (name == "saving_ms_per_step") return finding.saving_ms_per_step;
  if (name == "saving_pct") return finding.saving_pct;
  FAIL("unknown finding field " << name);
  return 0;
}

}  // namespace

TEST_CASE("shipped rules load, with unique ids and names and the agreed layout") {
  const ptadvise::RuleSet& rules = ptadvise::testing::shipped_rules();
  REQUIRE(rules.infos().size() >= 6);
  std::set<std::string> ids, names;
  for (const auto& info : rules.infos()) {
    INFO(info.file);
    CHECK(ids.insert(info.id).second);
    CHECK(names.insert(info.name).second);
    REQUIRE_FALSE(info.tags.empty());
    // rules.d/<first tag>/<name>.yaml
    std::filesystem::path path(info.file);
    CHECK(path.filename().string() == info.name + ".yaml");
    CHECK(path.parent_path().filename().string() == info.tags.front());
  }
  for (const char* id : {"PTA101", "PTA102", "PTA103", "PTA104", "PTA105", "PTA106"}) CHECK(ids.count(id) == 1);
}

TEST_CASE("every rule has its four docs sections and both a firing and a quiet fixture") {
  const ptadvise::RuleSet& rules = ptadvise::testing::shipped_rules();
  for (size_t r = 0; r < rules.infos().size(); ++r) {
    const auto& info = rules.infos()[r];
    INFO(info.id << " " << info.file);
    CHECK_FALSE(info.docs.what.empty());
    CHECK_FALSE(info.docs.why.empty());
    CHECK_FALSE(info.docs.example.empty());
    CHECK_FALSE(info.docs.fix.empty());
    CHECK_FALSE(info.saving_method.empty());
    for (const auto& threshold : info.thresholds) CHECK_FALSE(threshold.doc.empty());
    bool fires = false, quiet = false;
    for (const auto& test : rules.tests(r)) {
      CHECK_MESSAGE(std::filesystem::exists(test.trace), "missing fixture " << test.trace);
      (test.findings > 0 ? fires : quiet) = true;
    }
    CHECK_MESSAGE(fires, "no firing fixture");
    CHECK_MESSAGE(quiet, "no quiet fixture");
  }
}

TEST_CASE("every rule reports exactly the findings its fixtures declare") {
  const ptadvise::RuleSet& rules = ptadvise::testing::shipped_rules();
  for (size_t r = 0; r < rules.infos().size(); ++r) {
    const auto& info = rules.infos()[r];
    for (const auto& test : rules.tests(r)) {
      INFO(info.id << " on " << test.trace);
      auto loaded = ptadvise::load_trace_file(test.trace);
      if (auto* error = std::get_if<ptadvise::LoadError>(&loaded)) {
        FAIL_CHECK(error->message);
        continue;
      }
      const auto& timeline = std::get<ptadvise::Timeline>(loaded);
      ptadvise::Analysis analysis = ptadvise::analyze(timeline);
      ptadvise::EvaluateOptions only;
      only.only = {info.id};
      if (!test.thresholds.empty()) only.thresholds[info.id] = test.thresholds;
      auto findings = ptadvise::evaluate(rules, analysis, only);
      std::string messages;
      for (const auto& finding : findings) messages += "\n  " + finding.message;
      INFO("findings:" << messages);
      CHECK(findings.size() == test.findings);
      if (findings.size() != test.findings) continue;
      for (size_t k = 0; k < test.expect.size(); ++k) {
        const auto& expected = test.expect[k];
        const auto& finding = findings[k];
        CHECK(finding.rule_id == info.id);
        if (!expected.op.empty()) CHECK(finding.site.op == expected.op);
        if (!expected.kernel.empty()) CHECK(finding.site.kernel == expected.kernel);
        if (!expected.message_contains.empty()) CHECK(finding.message.find(expected.message_contains) != std::string::npos);
        for (const auto& number : expected.numbers) {  // no structured binding: INFO captures it (Clang 14)
          INFO(number.first);
          CHECK(field(finding, number.first) == doctest::Approx(number.second).epsilon(0.01));
        }
      }
    }
  }
}
