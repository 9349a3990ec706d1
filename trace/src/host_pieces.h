// Internal to trace/: the pieces the idle ledger (idle.cpp) is built from — each device's busy intervals,
// what a host thread was running moment by moment, its blocking calls and graph-capture stretches.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis_detail.h"

namespace ptadvise::detail {

// Busy intervals of one device with the GPU op that opens each (the op after a gap) and the op that ends
// last in it (the op before the next gap).
struct DeviceBusy {
  std::vector<Interval> busy;
  std::vector<EventIndex> first_op;
  std::vector<EventIndex> last_op;
};
std::vector<DeviceBusy> device_busy(const Timeline& timeline, const std::vector<int32_t>& devices);

// A stretch of one host thread with the innermost event running on it (kNone: nothing recorded).
struct Piece {
  int64_t start_ns;
  int64_t end_ns;
  EventIndex innermost;
};

// Splits [from, to) on a CPU track by the innermost event covering each moment. Visits only the events
// that start inside the range, plus the enclosing chain at `from`.
void sweep_thread(const Timeline& timeline, uint32_t track, int64_t from, int64_t to, std::vector<Piece>& pieces);

// Per CPU track, the stretches in which the thread records CUDA/HIP graphs (sorted): from a BeginCapture
// to its EndCapture, and across consecutive captures (piecewise graphs, one per batch size) as long as the
// thread launches no work that runs in between: the preparation of the next capture is part of capturing.
// `launching` marks the events with a launch of GPU work inside them.
std::vector<std::vector<Interval>> capture_stretches(const Timeline& timeline, const NameClasses& names,
                                                     const std::vector<uint8_t>& launching);

}  // namespace ptadvise::detail
