// Internal to trace/: the stages of analyze() and the name classes they share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise::detail {

// A CPU op or an annotation: what a step marker, an iteration range or an enclosing host call can be
// (not a runtime call, not a Python frame).
inline bool is_op_or_annotation(EventKind kind) { return kind == EventKind::CpuOp || kind == EventKind::UserAnnotation; }

// What a name means to the analyses; computed once per distinct interned name, never per event.
enum NameClass : uint16_t {
  kStepMarker = 1u << 0,     // ProfilerStep#N
  kDataLoader = 1u << 1,     // enumerate(DataLoader)#...__next__
  kSyncCall = 1u << 2,       // host-blocking runtime/driver call: *Synchronize, synchronous memcpy
  kAsyncMemcpy = 1u << 3,    // cudaMemcpyAsync and friends: blocking when followed by a synchronize
  kLaunchCall = 1u << 4,     // runtime/driver call that queues GPU work (kernel, copy, memset, graph)
  kHostSyncRecord = 1u << 5, // cuda_sync record of a host wait: Stream/Event/Context/Device Sync
  kIterationStart = 1u << 7, // enumerate(DataLoader)#...__next__, Optimizer.zero_grad#...: open an iteration
  kIterationEnd = 1u << 8,   // Optimizer.step#...: closes an iteration
  kOneOffWork = 1u << 9,     // warm-up work: cudaMalloc/cudaFree, cuDNN autotuning, module loading
  kCaptureBegin = 1u << 10,  // cudaStreamBeginCapture, hipStreamBeginCapture (+ _v2, ToGraph): graph recording starts
  kCaptureEnd = 1u << 11,    // cudaStreamEndCapture, hipStreamEndCapture
  kAllocation = 1u << 12,    // driver allocations and frees (cudaMalloc, cudaFree, hipMalloc, cuMemAlloc, ...)
  kModuleLoad = 1u << 13,    // cuModuleLoad..., cuLibraryLoad..., hipModuleLoad...: code loading
  kRelease = 1u << 14,       // the frees among the allocations: cudaFree, hipFree, cuMemFree, cudaFreeHost, ...
};

struct NameClasses {
  std::vector<uint16_t> by_name;  // indexed by StringId
  bool has(const Timeline& timeline, EventIndex i, NameClass c) const {
    return (by_name[timeline.events.name[i]] & c) != 0;
  }
};
NameClasses classify_names(const StringPool& strings);
uint16_t classify_name(std::string_view name);

// Index of the step whose [start, end) (as given by the accessors) contains ts, or kNone. Steps are
// sorted by start; an earlier step may still contain ts when intervals overlap, so one step back is checked.
template <typename Start, typename End>
uint32_t step_containing(const std::vector<Step>& steps, int64_t ts, Start start_of, End end_of) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                             [&](int64_t value, const Step& step) { return value < start_of(step); });
  if (it == steps.begin()) return kNone;
  size_t index = static_cast<size_t>(it - steps.begin()) - 1;
  if (ts < end_of(steps[index])) return static_cast<uint32_t>(index);
  if (index > 0 && ts < end_of(steps[index - 1]) && ts >= start_of(steps[index - 1])) {
    return static_cast<uint32_t>(index - 1);
  }
  return kNone;
}

// Step detection (steps.cpp): fills steps, step_source, step_note, event_step, main_track.
void find_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis);
// Steps from a repeating kernel sequence (step_inference.cpp); false when none is taken. `inside_call`
// says, when the longest repeat found was refused as parts of one call, what repeats and where.
bool infer_steps(const Timeline& timeline, Analysis& analysis, std::string& inside_call);

// Iterations (iterations.cpp). Without markers: steps from annotations that repeat once per iteration
// (data-loader fetches, optimizer steps, a user's record_function range); false when there are none.
bool find_annotation_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis);
// Splits each ProfilerStep that holds the same number (>= 2) of iterations into those iterations.
void split_marker_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis);
// After events are assigned: each step's period and the leading warm-up steps (step_periods.cpp).
void measure_periods(const Timeline& timeline, const NameClasses& names, Analysis& analysis);

// Busy union and the idle ledger (idle.cpp).
struct DeviceBusy;  // host_pieces.h
// Sets Analysis::devices and Analysis::busy; returns each device's busy intervals with the ops that open and
// close them, which the idle ledger charges gaps from (computed once for both).
std::vector<DeviceBusy> compute_busy(const Timeline& timeline, Analysis& analysis);
void compute_step_windows(Analysis& analysis);
// On `threads` threads (runs of steps shared out); the same ledger on any number. `devices`: compute_busy's.
void build_idle_ledger(const Timeline& timeline, const NameClasses& names, Analysis& analysis,
                       const std::vector<DeviceBusy>& devices, unsigned threads = 1);
// Sets Analysis::steady_state from the ledger (called by build_idle_ledger).
void judge_steady_state(Analysis& analysis);
// Runtime/driver calls that block the host until the GPU catches up: synchronizes, synchronous copies, an
// async copy followed by a synchronize, calls a host-wait cuda_sync record links to.
std::unordered_set<EventIndex> blocking_calls(const Timeline& timeline, const NameClasses& names);
// The rest of the step ledger (step_ledger.cpp): per step, GPU busy time and how much of it faster GPU
// work could take off the step.
void build_step_ledger(const Timeline& timeline, const NameClasses& names, Analysis& analysis);

// Merges intervals in place (sorted by start first); the result is disjoint and sorted.
void merge_intervals(std::vector<Interval>& intervals);
// Length of the union of sorted disjoint intervals clipped to [start, end).
int64_t covered_ns(const std::vector<Interval>& merged, int64_t start, int64_t end);

// A value of `start` that follows from its parent's (`outside` above the outermost event) through
// `derive(event, value of its parent)`, memoised in `memo` for `start` and every event up to the first
// one already known. Each event is derived once, however many of its descendants are asked about:
// walking the whole nesting for every event is quadratic in its depth (200k nested ops took minutes).
template <class Value, class Derive>
Value derive_down(const Events& events, EventIndex start, std::vector<std::optional<Value>>& memo, Value outside,
                  Derive derive) {
  if (memo.size() != events.size()) memo.assign(events.size(), std::nullopt);
  std::vector<EventIndex> path;
  EventIndex e = start;
  for (; e != kNone && !memo[e]; e = events.parent[e]) path.push_back(e);
  Value value = e == kNone ? outside : *memo[e];
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    value = derive(*it, value);
    memo[*it] = value;
  }
  return value;
}

// The host-side event standing for `i`: GPU ops map to their launch call, else to the CPU op of their
// External id; host events stand for themselves.
inline EventIndex host_side(const Analysis& analysis, EventIndex i) {
  const Events& events = analysis.timeline->events;
  if (i == kNone || i >= events.size()) return kNone;
  if (!is_gpu_side(events.kind[i])) return i;
  if (events.launch[i] != kNone) return events.launch[i];
  return analysis.cpu_op_by_external_id.find(events.external_id[i]);
}

}  // namespace ptadvise::detail
