#include <doctest/doctest.h>

#include "ptadvise/advisor.h"
#include "sample_report.h"
#include "temp_dir.h"

using namespace ptadvise;

TEST_CASE("suppression comments by id, by name, several, and bare") {
  CHECK(line_suppresses("x = loss.item()  # ptadvise: ignore[PTA101]", "PTA101", "item-sync-in-step"));
  CHECK(line_suppresses("x = loss.item()  # ptadvise: ignore[item-sync-in-step]", "PTA101", "item-sync-in-step"));
  CHECK(line_suppresses("x = loss.item()  #ptadvise:ignore[ PTA007 , PTA101 ]", "PTA101", "item-sync-in-step"));
  CHECK(line_suppresses("x = loss.item()  # ptadvise: ignore", "PTA101", "item-sync-in-step"));
  CHECK(line_suppresses("x = f()  # noqa: E501  # ptadvise: ignore  (known)", "PTA101", "x"));
  CHECK_FALSE(line_suppresses("x = loss.item()  # ptadvise: ignore[PTA007]", "PTA101", "item-sync-in-step"));
  CHECK_FALSE(line_suppresses("x = loss.item()  # ptadvise: ignored", "PTA101", "item-sync-in-step"));
  CHECK_FALSE(line_suppresses("x = loss.item()", "PTA101", "item-sync-in-step"));
  CHECK_FALSE(line_suppresses("x = loss.item()  # ptadvise: ignore[PTA1010]", "PTA101", "item-sync-in-step"));
  CHECK_FALSE(line_suppresses("# ptadvise: ignore[]", "PTA101", "item-sync-in-step"));
}

TEST_CASE("apply_suppressions reads the source line a finding points to") {
  testing::TempDir dir;
  std::string lines;
  for (int i = 1; i <= 60; ++i) {
    if (i == 42) {
      lines += "    loss_value = loss.item()  # ptadvise: ignore[PTA101]\n";
    } else {
      lines += "    pass\n";
    }
  }
  dir.write("train.py", lines);
  auto findings = testing::sample_findings();
  CHECK(apply_suppressions(findings, dir.path()) == 1);
  REQUIRE(findings.size() == 4);
  for (const auto& f : findings) CHECK(!(f.site.source && f.site.source->line == 42));

  // A trace recorded in another checkout: the absolute path's tail is found below the source root.
  auto moved = testing::sample_findings();
  moved[0].site.source->file = "/somewhere/else/train.py";
  CHECK(apply_suppressions(moved, dir.path()) == 1);

  // Unreadable files suppress nothing.
  auto elsewhere = testing::sample_findings();
  CHECK(apply_suppressions(elsewhere, dir.file("missing")) == 0);
  CHECK(elsewhere.size() == 5);
}
