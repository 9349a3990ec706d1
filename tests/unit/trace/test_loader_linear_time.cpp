// The loader and the analysis against inputs built to be slow: deep nesting, garbage that never closes.
// Each ran for minutes (quadratic) before; each must finish in linear time.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "loader_test_support.h"
#include "trace_builder.h"

using ptadvise::Timeline;
using ptadvise::testing::TraceBuilder;
using loader_test::load_ok;
using loader_test::ops_trace;

TEST_CASE("hostile: 200,000 nested CPU ops around an idle GPU are analysed in linear time") {
  // Each op encloses the next; the innermost launches a kernel after a long idle stretch, so the ledger
  // splits the gap at every nesting boundary. Walking the whole chain per piece took minutes.
  const int depth = 200000;
  TraceBuilder trace;
  trace.annotation("ProfilerStep#1", 0, 3.0 * depth + 1000);
  trace.launch("first", 1, 1, 2, 1);
  for (int i = 0; i < depth; ++i) trace.cpu_op("op" + std::to_string(i % 7), 10 + i, 2.0 * depth - 2 * i + 500);
  trace.launch("late", 10 + depth + 100, 1, 10 + depth + 110, 1);
  Timeline timeline = trace.load();
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  int64_t idle = 0;
  for (const auto& gap : analysis.idle) idle += gap.duration_ns();
  CHECK(idle > 0);
  CHECK(timeline.events.parent[timeline.events.size() - 3] != ptadvise::kNone);
}

TEST_CASE("hostile: 200,000 nested CPU ops: the source and the CPU op of every event in linear time") {
  // Asked for every event, the way rules group their sites: each question walked the whole nesting
  // (4e10 steps here).
  const int depth = 200000;
  TraceBuilder trace;
  trace.python_frame("train.py(12): step", 0, 3.0 * depth + 1000, 1, -1);
  for (int i = 0; i < depth; ++i) trace.cpu_op("op" + std::to_string(i), 10 + i, 2.0 * depth - 2 * i + 500);
  trace.launch("late", 10 + depth + 100, 1, 10 + depth + 110, 1);
  Timeline timeline = trace.load();
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  size_t in_train_py = 0, with_op = 0;
  ptadvise::EventIndex kernel = ptadvise::kNone, innermost = ptadvise::kNone;
  for (ptadvise::EventIndex e = 0; e < timeline.events.size(); ++e) {
    auto source = analysis.user_source(e);
    in_train_py += source && source->file == "train.py" && source->line == 12 ? 1 : 0;
    with_op += analysis.cpu_op_of(e) != ptadvise::kNone ? 1 : 0;
    if (timeline.events.kind[e] == ptadvise::EventKind::Kernel) kernel = e;
    if (timeline.name(e) == "op" + std::to_string(depth - 1)) innermost = e;
  }
  CHECK(timeline.events.size() == depth + 3);
  CHECK(in_train_py == depth + 3);
  CHECK(with_op == depth + 2);  // all but the python frame
  REQUIRE(kernel != ptadvise::kNone);
  CHECK(analysis.cpu_op_of(kernel) == innermost);
}

TEST_CASE("hostile: 200,000 nested CPU ops each launching a kernel: the idle ledger in linear time") {
  // Every gap between two kernels lies inside the whole nesting; each gap copied the open chain.
  const int depth = 200000;
  TraceBuilder trace;
  trace.annotation("ProfilerStep#1", 0, 10.0 * depth + 1000);
  for (int i = 0; i < depth; ++i) {
    const double ts = 10 + 5.0 * i;
    trace.cpu_op("op" + std::to_string(i % 7), ts, 10.0 * depth - 10 * i + 500);
    trace.launch("k", ts + 1, 1, ts + 3, 2);
  }
  Timeline timeline = trace.load();
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  int64_t idle = 0;
  for (const auto& gap : analysis.idle) idle += gap.duration_ns();
  // The step's window less its kernels.
  CHECK(idle == (int64_t{10000} * depth + 1'000'000) - int64_t{2000} * depth);
}

TEST_CASE("hostile: garbage lines full of unclosed braces are skipped in linear time") {
  // Every line starts like an event and never closes: each one used to be scanned to the end of the
  // input, quadratic in its size (a corrupt gzip stream inflates to such garbage; found by fuzz_pipeline).
  std::string text = ops_trace(10, 1000, "");
  std::string garbage;
  for (int i = 0; i < 400000; ++i) garbage += "{[\n";
  size_t at = text.find("\n", text.find("\"op4\"")) + 1;
  Timeline timeline = load_ok(text.substr(0, at) + garbage + text.substr(at));
  CHECK(timeline.events.size() == 10);
  CHECK(timeline.stats.lost_bytes >= garbage.size());
  CHECK(ptadvise::partial_trace_problem(timeline));
}
