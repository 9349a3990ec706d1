// bench/gen_trace.py scales a real trace by repeating its profiled window. The benchmark's numbers only mean
// something if the result loads as a longer run of the same program: every kind of event repeated, steps
// continued, and every GPU op still linked to its own launch (ids unique per copy), never to a launch in
// another copy. This checks that with the real loader and analysis, on a small real trace.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <variant>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "../advisor/temp_dir.h"

namespace {

constexpr const char* kSource =
    PTADVISE_SHARED_DIR "/traces/TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz";
constexpr int kCopies = 3;

bool have_python3() { return std::system("python3 -c 'import json, gzip' >/dev/null 2>&1") == 0; }

ptadvise::Timeline load_generated(const std::string& path) {
  auto result = ptadvise::load_trace_file(path);
  if (auto* error = std::get_if<ptadvise::LoadError>(&result)) FAIL(error->message);
  return std::get<ptadvise::Timeline>(std::move(result));
}

std::map<ptadvise::EventKind, size_t> count_by_kind(const ptadvise::Timeline& timeline) {
  std::map<ptadvise::EventKind, size_t> counts;
  for (ptadvise::EventKind kind : timeline.events.kind) ++counts[kind];
  return counts;
}

size_t linked_gpu_ops(const ptadvise::Timeline& timeline) {
  size_t linked = 0;
  for (ptadvise::EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (ptadvise::is_gpu_activity(timeline.events.kind[i]) && timeline.events.launch[i] != ptadvise::kNone) ++linked;
  }
  return linked;
}

}  // namespace

TEST_CASE("bench/gen_trace.py: a scaled trace loads as a longer run of the same program" * doctest::test_suite("corpus")) {
  if (!std::filesystem::exists(kSource)) {
    MESSAGE("skipped: " << kSource << " is absent (../shared/traces not present)");
    return;
  }
  if (!have_python3()) {
    MESSAGE("skipped: python3 is not available to run bench/gen_trace.py");
    return;
  }
  ptadvise::testing::TempDir dir;
  const std::string generated = dir.file("scaled.json");
  const std::string command = std::string("python3 '") + PTADVISE_SOURCE_DIR "/bench/gen_trace.py' '" + kSource +
                              "' '" + generated + "' --copies " + std::to_string(kCopies) + " 2>/dev/null";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  const ptadvise::Timeline source = load_generated(kSource);
  const ptadvise::Timeline scaled = load_generated(generated);
  CHECK(scaled.stats.malformed_events == 0);

  // Every kind of timed event repeats once per copy, except the profiler's own session markers, which
  // stay single (one "Trace" span and two global instants in this source).
  auto source_counts = count_by_kind(source);
  auto scaled_counts = count_by_kind(scaled);
  for (auto kind : {ptadvise::EventKind::CpuOp, ptadvise::EventKind::PythonFunction, ptadvise::EventKind::Runtime,
                    ptadvise::EventKind::Driver, ptadvise::EventKind::Kernel, ptadvise::EventKind::Memcpy,
                    ptadvise::EventKind::UserAnnotation, ptadvise::EventKind::GpuAnnotation}) {
    CAPTURE(ptadvise::to_string(kind));
    CHECK(scaled_counts[kind] == kCopies * source_counts[kind]);
  }
  CHECK(source_counts[ptadvise::EventKind::Kernel] == 60);

  // Ids unique per copy: each GPU op links to a launch of its own copy, so both the number of links and
  // the launch-to-op delays are those of the source, copy after copy.
  const size_t source_linked = linked_gpu_ops(source);
  CHECK(source_linked > 0);
  CHECK(linked_gpu_ops(scaled) == kCopies * source_linked);
  int64_t max_source_delay = 0;
  for (ptadvise::EventIndex i = 0; i < source.events.size(); ++i) {
    if (!ptadvise::is_gpu_activity(source.events.kind[i]) || source.events.launch[i] == ptadvise::kNone) continue;
    max_source_delay = std::max(max_source_delay, source.events.ts_ns[i] - source.events.ts_ns[source.events.launch[i]]);
  }
  int64_t max_scaled_delay = 0;
  for (ptadvise::EventIndex i = 0; i < scaled.events.size(); ++i) {
    if (!ptadvise::is_gpu_activity(scaled.events.kind[i]) || scaled.events.launch[i] == ptadvise::kNone) continue;
    max_scaled_delay = std::max(max_scaled_delay, scaled.events.ts_ns[i] - scaled.events.ts_ns[scaled.events.launch[i]]);
  }
  CHECK(max_scaled_delay == max_source_delay);

  // Steps continue: one ProfilerStep per copy here, numbered on from the source's.
  const ptadvise::Analysis source_analysis = ptadvise::analyze(source);
  const ptadvise::Analysis scaled_analysis = ptadvise::analyze(scaled);
  REQUIRE(source_analysis.step_source == ptadvise::StepSource::ProfilerStep);
  REQUIRE(scaled_analysis.step_source == ptadvise::StepSource::ProfilerStep);
  REQUIRE(source_analysis.steps.size() == 1);
  REQUIRE(scaled_analysis.steps.size() == kCopies * source_analysis.steps.size());
  for (size_t s = 0; s < scaled_analysis.steps.size(); ++s) {
    CAPTURE(s);
    CHECK(scaled_analysis.steps[s].number == source_analysis.steps[0].number + static_cast<int64_t>(s));
    CHECK(scaled_analysis.steps[s].duration_ns() == source_analysis.steps[0].duration_ns());
  }
}
