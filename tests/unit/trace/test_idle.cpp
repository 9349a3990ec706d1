// Busy union and the idle ledger: one fixture per cause with the exact time charged, and the invariant
// that the ledger sums to the idle time inside the step windows.
#include <doctest/doctest.h>

#include "ptadvise/analysis.h"
#include "test_analysis_helpers.h"
#include "trace_builder.h"

using namespace ptadvise;
using namespace ptadvise::testing;

namespace {

int64_t charged(const Analysis& analysis, IdleCause cause, EventIndex culprit) {
  int64_t total = 0;
  for (const IdleGap& gap : analysis.idle) {
    if (gap.cause == cause && gap.culprit == culprit) total += gap.duration_ns();
  }
  return total;
}

}  // namespace

TEST_CASE("busy: per-device union of kernels, copies and memsets; sync records never count") {
  TraceBuilder trace(Era::Kineto2023);
  trace.kernel("k1", 100, 50, 1, 0, 7);
  trace.kernel("k2", 120, 50, 2, 0, 8);  // overlaps k1 on another stream
  trace.memcpy("HtoD", "Pinned", "Device", 200, 10, 4096, 3, 0, 7);
  trace.memset(210, 5, 64, 4, 0, 7);  // touches the copy: one interval
  trace.sync("Stream Sync", 300, 100, -1, 0, 7);
  trace.kernel("k3", 100, 10, 5, 1, 7);  // device 1
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  Clock clock(timeline, find_event(timeline, "k1"), 100);
  REQUIRE(analysis.devices == std::vector<int32_t>{0, 1});
  REQUIRE(analysis.busy[0].size() == 2);
  CHECK(analysis.busy[0][0].start_ns == clock.at(100));
  CHECK(analysis.busy[0][0].end_ns == clock.at(170));
  CHECK(analysis.busy[0][1].start_ns == clock.at(200));
  CHECK(analysis.busy[0][1].end_ns == clock.at(215));
  REQUIRE(analysis.busy[1].size() == 1);
  CHECK(analysis.busy[1][0].end_ns - analysis.busy[1][0].start_ns == us(10));
}

TEST_CASE("ledger: sync — .item() blocks the host in cudaStreamSynchronize") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.launch("gemm", 0, 1, 0, 200);
  trace.cpu_op("aten::_local_scalar_dense", 250, 350);  // ends 600
  const int64_t copy = trace.next_correlation();
  trace.runtime("cudaMemcpyAsync", 260, 10, copy);
  trace.memcpy("DtoH", "Device", "Pageable", 270, 10, 4, copy);
  const int64_t sync = trace.next_correlation();
  trace.runtime("cudaStreamSynchronize", 280, 300, sync);  // ends 580
  trace.launch("next_kernel", 600, 5, 700, 300);  // ends 1000
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex item = find_event(timeline, "aten::_local_scalar_dense");
  const EventIndex late_launch = find_event(timeline, "cudaLaunchKernel", 1);

  // Gap 200..270: 50 untraced, 10 in the op, 10 in the copy that the synchronize makes blocking.
  // Gap 280..700: 300 synchronizing, 20 in the op, 5 launching (not launch-bound), 95 untraced.
  CHECK(charged(analysis, IdleCause::Sync, item) == us(310));
  CHECK(charged(analysis, IdleCause::CpuWork, item) == us(30));
  CHECK(charged(analysis, IdleCause::CpuWork, late_launch) == us(5));
  CHECK(analysis.idle_ns(IdleCause::Untraced) == us(145));
  CHECK(analysis.idle_ns(IdleCause::LaunchBound) == 0);
  CHECK(analysis.total_idle_ns() == us(490));
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
  for (const IdleGap& gap : analysis.idle) CHECK(gap.step == 0);
}

TEST_CASE("ledger: sync — synchronous hipMemcpyWithStream and a cuda_sync record") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 500);
  trace.launch("k", 0, 1, 0, 100);
  trace.cpu_op("aten::copy_", 100, 200);  // ends 300
  const int64_t copy = trace.next_correlation();
  trace.runtime("hipMemcpyWithStream", 110, 180, copy);  // ends 290
  trace.memcpy("DtoH", "Device", "Pageable", 280, 10, 4, copy);
  trace.cpu_op("aten::wait", 300, 100);  // ends 400
  trace.launch("kw", 302, 2, 305, 1);      // the op queues work, then waits for it
  const int64_t wait = trace.next_correlation();
  trace.runtime("cudaEventQuery", 310, 80, wait);  // only the sync record says it blocked
  trace.sync("Event Sync", 310, 80, wait);
  trace.launch("k2", 400, 1, 400, 100);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex copy_op = find_event(timeline, "aten::copy_");
  const EventIndex wait_op = find_event(timeline, "aten::wait");
  CHECK(charged(analysis, IdleCause::Sync, copy_op) == us(170));  // 110..280
  CHECK(charged(analysis, IdleCause::CpuWork, copy_op) == us(10 + 10));
  CHECK(charged(analysis, IdleCause::Sync, wait_op) == us(80));
  // 300..302 and 304..305 in the op, 302..304 launching kw, 306..310 and 390..400 in the op.
  CHECK(charged(analysis, IdleCause::CpuWork, wait_op) == us(2 + 2 + 1 + 4 + 10));
  CHECK(analysis.total_idle_ns() == us(289));
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
}

TEST_CASE("ledger: a synchronize that begins after the GPU went idle and queues nothing is the host's time") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 300);
  trace.launch("k1", 0, 1, 10, 90);  // runs 10..100
  const int64_t drain = trace.next_correlation();
  trace.runtime("cudaDeviceSynchronize", 50, 55, drain);  // begins while k1 runs, returns at 105
  const int64_t idle_check = trace.next_correlation();
  trace.runtime("cudaDeviceSynchronize", 150, 20, idle_check);  // the GPU has been idle since 100
  trace.launch("k2", 200, 1, 205, 95);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex draining = find_event(timeline, "cudaDeviceSynchronize", 0);
  const EventIndex waiting_for_nothing = find_event(timeline, "cudaDeviceSynchronize", 1);
  // The first waits while the GPU drains k1: 100..105 is the sync's. The second finds nothing to wait for:
  // its 20 us are host time like any other call (the GPU was already waiting for the host).
  CHECK(charged(analysis, IdleCause::Sync, draining) == us(5));
  CHECK(charged(analysis, IdleCause::Sync, waiting_for_nothing) == 0);
  CHECK(charged(analysis, IdleCause::CpuWork, waiting_for_nothing) == us(20));
  CHECK(analysis.idle_ns(IdleCause::Sync) == us(5));
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
}

TEST_CASE("ledger: data loader — the host waits in DataLoader __next__ at the start of the step") {
  TraceBuilder trace(Era::Kineto2022);
  trace.annotation("ProfilerStep#4", 0, 1000);
  trace.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 400);
  trace.cpu_op("aten::stack", 100, 200);
  trace.launch("first_kernel", 400, 5, 410, 590);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex loader = find_event(timeline, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  CHECK(charged(analysis, IdleCause::DataLoader, loader) == us(400));
  CHECK(analysis.idle_ns(IdleCause::DataLoader) == us(400));
  CHECK(analysis.idle_ns(IdleCause::CpuWork) == us(5));
  CHECK(analysis.idle_ns(IdleCause::Untraced) == us(5));
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
  REQUIRE(!analysis.idle.empty());
  CHECK(analysis.idle.front().start_ns == analysis.steps[0].start_ns);
  CHECK(to_string(IdleCause::DataLoader) == "data-loader");
}

TEST_CASE("ledger: launch-bound — tiny kernels drain faster than the host launches them") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 36);
  for (int k = 0; k < 3; ++k) {
    const double t = 12.0 * k;
    trace.cpu_op("aten::add", t, 10);
    trace.launch("add_kernel", t + 2, 8, t + 10, 2);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  CHECK(analysis.idle_ns(IdleCause::LaunchBound) == us(30));
  CHECK(analysis.total_idle_ns() == us(30));
  for (int k = 0; k < 3; ++k) {
    CHECK(charged(analysis, IdleCause::LaunchBound, find_event(timeline, "aten::add", k)) == us(10));
  }
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
}

TEST_CASE("ledger: CPU work in an op and a Python frame, untraced time around them") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.launch("k1", 0, 1, 0, 100);
  trace.python_frame("train.py(42): preprocess", 150, 500, 1, -1);  // ends 650
  trace.cpu_op("aten::sort", 200, 300);                              // ends 500
  trace.launch("k2", 700, 5, 705, 295);                              // ends 1000
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  const EventIndex frame = find_event(timeline, "train.py(42): preprocess");
  CHECK(charged(analysis, IdleCause::CpuWork, find_event(timeline, "aten::sort")) == us(300));
  CHECK(charged(analysis, IdleCause::CpuWork, frame) == us(200));
  CHECK(charged(analysis, IdleCause::CpuWork, find_event(timeline, "cudaLaunchKernel", 1)) == us(5));
  CHECK(analysis.idle_ns(IdleCause::Untraced) == us(100));
  CHECK(analysis.total_idle_ns() == us(605));
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
}

TEST_CASE("ledger: untraced — the launching thread recorded nothing during the gap") {
  TraceBuilder trace(Era::Kineto2023);
  trace.annotation("ProfilerStep#1", 0, 1000, 1);
  trace.launch("k1", 0, 1, 0, 100, 0, 7, 2);
  trace.launch("k2", 900, 1, 900, 100, 0, 7, 2);
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.idle.size() == 1);
  CHECK(analysis.idle[0].cause == IdleCause::Untraced);
  CHECK(analysis.idle[0].culprit == kNone);
  CHECK(analysis.idle[0].duration_ns() == us(800));
  CHECK(analysis.idle[0].device == 0);
}

TEST_CASE("ledger: every idle ns inside steps is charged once, across devices and overlapping spans") {
  TraceBuilder trace(Era::Kineto2023);
  for (int step = 0; step < 4; ++step) {
    const double t = 1000.0 * step;
    trace.annotation("ProfilerStep#" + std::to_string(step), t, 1000);
    trace.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t, 100 + 20 * step);
    trace.cpu_op("aten::linear", t + 200, 300);
    trace.launch("gemm", t + 210, 5, t + 400, 900);  // runs into the next step's CPU interval
    trace.launch("gemm_dev1", t + 220, 5, t + 500, 300, 1);
    trace.cpu_op("aten::item", t + 600, 300);
    const int64_t sync = trace.next_correlation();
    trace.runtime("cudaDeviceSynchronize", t + 610, 250, sync);
    trace.launch("tiny", t + 950, 4, t + 960, 2, 0, 8);
  }
  Timeline timeline = trace.load();
  Analysis analysis = analyze(timeline);
  REQUIRE(analysis.steps.size() == 4);
  CHECK(analysis.devices.size() == 2);
  CHECK(analysis.total_idle_ns() == idle_inside_windows(analysis));
  int64_t by_cause = 0;
  for (IdleCause cause : {IdleCause::Sync, IdleCause::DataLoader, IdleCause::LaunchBound, IdleCause::CpuWork,
                          IdleCause::Untraced}) {
    by_cause += analysis.idle_ns(cause);
  }
  CHECK(by_cause == analysis.total_idle_ns());
  // No two entries overlap on a device, entries are ordered, and each lies inside its step's window.
  for (size_t k = 0; k < analysis.idle.size(); ++k) {
    const IdleGap& gap = analysis.idle[k];
    CHECK(gap.start_ns < gap.end_ns);
    REQUIRE(gap.step < analysis.step_windows.size());
    CHECK(gap.start_ns >= analysis.step_windows[gap.step].start_ns);
    CHECK(gap.end_ns <= analysis.step_windows[gap.step].end_ns);
    if (k > 0 && analysis.idle[k - 1].device == gap.device) CHECK(analysis.idle[k - 1].end_ns <= gap.start_ns);
  }
  CHECK(analysis.idle_ns(IdleCause::DataLoader) > 0);
  CHECK(analysis.idle_ns(IdleCause::Sync) > 0);
}
