// The replay tests' hand-built trace (test_replay*.cpp): a step launches one kernel and waits for it with
// cudaStreamSynchronize; every figure of the replay follows from the event times.
#pragma once

#include <string>

#include "ptadvise/timeline.h"
#include "trace_builder.h"

namespace ptadvise::testing {

// Step k runs from 100k µs: launch at +5 (5 µs), kernel +10..+70, sync +15..+72, Python to +100. Five
// events a step.
inline Timeline gemm_steps(int steps, double kernel_us = 60) {
  testing::TraceBuilder trace(testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  for (int k = 0; k < steps; ++k) {
    const double s = 1000 + 100.0 * k;
    trace.annotation("ProfilerStep#" + std::to_string(k + 1), s, 100);
    trace.cpu_op("aten::mm", s + 4, 7);
    trace.launch("gemm_kernel", s + 5, 5, s + 10, kernel_us);
    trace.runtime("cudaStreamSynchronize", s + 15, 57, trace.next_correlation());
  }
  return trace.load();
}

inline Timeline three_steps(double kernel_us = 60) { return gemm_steps(3, kernel_us); }

}  // namespace ptadvise::testing
