// CpuOpsByExternalId: CPU ops by `External id`, the first op in event order for an id several carry.
#include <doctest/doctest.h>

#include <map>
#include <utility>
#include <vector>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

TEST_CASE("CpuOpsByExternalId: the first op in event order per id; ids it does not hold find nothing") {
  // Ascending runs of ids as several threads write them, with ids repeated across runs and ids <= 0.
  const CpuOpsByExternalId ops({{5, 10}, {3, 11}, {9, 12}, {3, 13}, {7, 14}, {0, 15}, {5, 16}, {-1, 17}, {2, 18}});
  CHECK(ops.size() == 5);
  CHECK(ops.find(2) == 18);
  CHECK(ops.find(3) == 11);  // not 13
  CHECK(ops.find(5) == 10);  // not 16
  CHECK(ops.find(7) == 14);
  CHECK(ops.find(9) == 12);
  CHECK(ops.find(4) == kNone);
  CHECK(ops.find(100) == kNone);
  CHECK(ops.find(0) == kNone);   // written, but not an id
  CHECK(ops.find(-1) == kNone);
  CHECK(CpuOpsByExternalId().find(1) == kNone);
}

TEST_CASE("CpuOpsByExternalId: many interleaved runs find what a map keeping the first insert finds") {
  std::vector<std::pair<int64_t, EventIndex>> written;
  std::map<int64_t, EventIndex> expected;
  for (EventIndex e = 0; e < 3000; ++e) {
    const int64_t id = (static_cast<int64_t>(e) * 7919) % 1201 - 50;  // unordered, repeated, some <= 0
    written.emplace_back(id, e);
    if (id > 0) expected.emplace(id, e);
  }
  const CpuOpsByExternalId ops(written);
  CHECK(ops.size() == expected.size());
  size_t mismatches = 0;
  for (int64_t id = -60; id < 1300; ++id) {
    auto found = expected.find(id);
    mismatches += ops.find(id) != (found != expected.end() ? found->second : kNone) ? 1 : 0;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("Analysis::cpu_op_by_external_id: CPU ops without step markers, the first in the file per id") {
  TraceBuilder trace(Era::Kineto2023);
  // A step marker written as a CPU op with the id a real op carries too: the op is found, not the marker.
  trace.cpu_op("ProfilerStep#1", 0, 1000, "\"External id\": 7");
  trace.cpu_op("aten::mm", 100, 50, "\"External id\": 7", 2);
  // Two ops share id 8: the first written wins, though the second starts earlier.
  trace.cpu_op("first_written", 300, 20, "\"External id\": 8");
  trace.cpu_op("second_written", 200, 20, "\"External id\": 8", 2);
  trace.annotation("annotated", 400, 20, 1, "\"External id\": 9");  // not a CPU op
  trace.kernel("orphan_kernel", 150, 10, 999, 0, 7, "\"External id\": 7");  // no launch recorded
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex mm = find_event(timeline, "aten::mm");
  CHECK(analysis.cpu_op_by_external_id.find(7) == mm);
  CHECK(analysis.cpu_op_by_external_id.find(8) == find_event(timeline, "first_written"));
  CHECK(analysis.cpu_op_by_external_id.find(9) == kNone);
  CHECK(analysis.cpu_op_by_external_id.find(10) == kNone);
  CHECK(analysis.cpu_op_by_external_id.size() == 2);
  CHECK(analysis.cpu_op_of(find_event(timeline, "orphan_kernel")) == mm);
}
