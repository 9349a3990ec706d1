// analyze(): the orchestration of the analyses, and the lookups rules use on an Analysis.
#include "ptadvise/analysis.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <mutex>
#include <string_view>

#include "analysis_detail.h"
#include "host_pieces.h"
#include "parallel.h"
#include "ptadvise/cores.h"

namespace ptadvise {

std::string_view to_string(StepSource source) {
  switch (source) {
    case StepSource::ProfilerStep:
      return "ProfilerStep";
    case StepSource::Annotations:
      return "annotations";
    case StepSource::Inferred:
      return "inferred";
    case StepSource::WholeWindow:
      return "whole-window";
  }
  return "whole-window";
}

std::string_view to_string(IdleCause cause) {
  switch (cause) {
    case IdleCause::Sync:
      return "sync";
    case IdleCause::DataLoader:
      return "data-loader";
    case IdleCause::LaunchBound:
      return "launch-bound";
    case IdleCause::CpuWork:
      return "cpu-work";
    case IdleCause::Untraced:
      return "untraced";
    case IdleCause::GraphCapture:
      return "graph-capture";
    case IdleCause::ExternalWait:
      return "external-wait";
    case IdleCause::WarmUp:
      return "warm-up";
  }
  return "untraced";
}

int64_t Step::span_start() const { return gpu_start_ns >= 0 ? std::min(start_ns, gpu_start_ns) : start_ns; }
int64_t Step::span_end() const { return gpu_end_ns >= 0 ? std::max(end_ns, gpu_end_ns) : end_ns; }

namespace detail {

uint16_t classify_name(std::string_view name) {
  uint16_t classes = 0;
  if (name.starts_with("ProfilerStep#")) classes |= kStepMarker;
  if (name.starts_with("enumerate(DataLoader)#") && name.find("__next__") != std::string_view::npos) {
    classes |= kDataLoader | kIterationStart;
  }
  if (name.starts_with("Optimizer.zero_grad#")) classes |= kIterationStart;
  if (name.starts_with("Optimizer.step#")) classes |= kIterationEnd;
  // One-off work of the first iterations: the caching allocator's driver allocations, cuDNN's algorithm
  // search (cudnn.benchmark), lazy module loading. Stream-ordered (Async) allocations are steady-state work.
  const bool releases = name == "cudaFree" || name == "hipFree" || name == "cuMemFree" || name == "cuMemFree_v2" ||
                        name == "cudaFreeHost" || name == "hipHostFree" || name == "hipFreeHost";
  const bool allocates = releases || name == "cudaMalloc" || name == "hipMalloc" || name == "cuMemAlloc" ||
                         name == "cuMemAlloc_v2" || name == "cudaHostAlloc" || name == "cudaMallocHost" ||
                         name == "hipHostMalloc";
  const bool autotunes = (name.starts_with("cudnn") && name.find("Find") != std::string_view::npos) ||
                         name.starts_with("miopenFind");
  const bool loads_modules = name.starts_with("cuModuleLoad") || name.starts_with("cuLibraryLoad") ||
                             name.starts_with("hipModuleLoad");
  if (allocates || autotunes || loads_modules) classes |= kOneOffWork;
  if (allocates) classes |= kAllocation;
  if (releases) classes |= kRelease;
  if (loads_modules) classes |= kModuleLoad;
  const bool is_memcpy_call =
      name.starts_with("cudaMemcpy") || name.starts_with("hipMemcpy") || name.starts_with("cuMemcpy");
  const bool is_async = name.find("Async") != std::string_view::npos;
  if (name.find("Synchronize") != std::string_view::npos) classes |= kSyncCall;
  // Intel GPUs' Unified Runtime: a queue's finish and an event wait block the host (Level Zero's own
  // waits are the ze*Synchronize calls above).
  if (name == "urQueueFinish" || name == "urEventWait") classes |= kSyncCall;
  if (is_memcpy_call && !is_async) classes |= kSyncCall;  // cudaMemcpy, hipMemcpyWithStream: host waits
  if (is_memcpy_call && is_async) classes |= kAsyncMemcpy;
  const bool is_memset_call =
      name.starts_with("cudaMemset") || name.starts_with("hipMemset") || name.starts_with("cuMemset");
  if (name.find("Launch") != std::string_view::npos || (is_memcpy_call && is_async) ||
      (is_memset_call && is_async)) {
    classes |= kLaunchCall;
  }
  if (name.starts_with("cudaStreamBeginCapture") || name.starts_with("hipStreamBeginCapture")) classes |= kCaptureBegin;
  if (name.starts_with("cudaStreamEndCapture") || name.starts_with("hipStreamEndCapture")) classes |= kCaptureEnd;
  if (name == "Stream Sync" || name == "Event Sync" || name == "Context Sync" || name == "Device Sync") {
    classes |= kHostSyncRecord;
  }
  return classes;
}

NameClasses classify_names(const StringPool& strings) {
  NameClasses classes;
  classes.by_name.resize(strings.size());
  for (StringId id = 0; id < strings.size(); ++id) classes.by_name[id] = classify_name(strings.view(id));
  return classes;
}

}  // namespace detail

CpuOpsByExternalId::CpuOpsByExternalId(std::vector<std::pair<int64_t, EventIndex>> ops_in_event_order)
    : ops_(std::move(ops_in_event_order)) {
  std::erase_if(ops_, [](const auto& op) { return op.first <= 0; });
  // In id order by a stable LSD radix sort, in as few passes of at most 13-bit digits as the largest id
  // needs: linear however the threads' ids interleave in the file (on a 1 GB trace a comparison sort, or
  // merging the ascending runs, cost more than the hash map this replaces). Stable: of the ops that share
  // an id, the first in event order comes first and is kept.
  auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(ops_.begin(), ops_.end(), by_id)) {
    uint64_t largest = 0;
    for (const auto& op : ops_) largest = std::max(largest, static_cast<uint64_t>(op.first));
    const unsigned width = static_cast<unsigned>(std::bit_width(largest));
    const unsigned passes = (width + 12) / 13;
    const unsigned digit_bits = (width + passes - 1) / passes;
    const uint64_t digit_mask = (uint64_t{1} << digit_bits) - 1;
    std::vector<std::pair<int64_t, EventIndex>> sorted(ops_.size());
    std::vector<size_t> first(size_t{1} << digit_bits);
    for (unsigned shift = 0; shift < width; shift += digit_bits) {
      auto digit = [&](const auto& op) { return (static_cast<uint64_t>(op.first) >> shift) & digit_mask; };
      std::fill(first.begin(), first.end(), 0);
      for (const auto& op : ops_) ++first[digit(op)];
      size_t total = 0;
      for (size_t& slot : first) {
        const size_t count = slot;
        slot = total;
        total += count;
      }
      for (const auto& op : ops_) sorted[first[digit(op)]++] = op;
      ops_.swap(sorted);
    }
  }
  ops_.erase(std::unique(ops_.begin(), ops_.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
             ops_.end());
}

EventIndex CpuOpsByExternalId::find(int64_t external_id) const {
  if (external_id <= 0) return kNone;
  auto it = std::lower_bound(ops_.begin(), ops_.end(), external_id,
                             [](const auto& op, int64_t id) { return op.first < id; });
  return it != ops_.end() && it->first == external_id ? it->second : kNone;
}

Analysis analyze(const Timeline& timeline, const KernelClassifier& kernels, unsigned threads) {
  Analysis analysis;
  analysis.timeline = &timeline;
  analysis.kernel_family = classify_kernels(kernels, timeline);
  const Events& events = timeline.events;
  const detail::NameClasses names = detail::classify_names(timeline.strings);
  if (threads == 0) threads = usable_cores();
  auto index_ops = [&] {
    std::vector<std::pair<int64_t, EventIndex>> ops;
    for (EventIndex i = 0; i < events.size(); ++i) {
      if (events.kind[i] != EventKind::CpuOp || events.external_id[i] <= 0) continue;
      if (names.has(timeline, i, detail::kStepMarker)) continue;
      ops.emplace_back(events.external_id[i], i);
    }
    analysis.cpu_op_by_external_id = CpuOpsByExternalId(std::move(ops));
  };
  auto steps = [&] {
    detail::find_steps(timeline, names, analysis);
    detail::compute_step_windows(analysis);
  };
  std::vector<detail::DeviceBusy> busy;
  auto devices = [&] {
    busy = detail::compute_busy(timeline, analysis);
    analysis.blocking_launches = blocking_launch_tracks(timeline);
  };
  // Three independent parts, each writing its own members of the analysis, shared out between (at most)
  // two threads, longest first: the steps, the ops by External id (only the idle ledger needs them), the
  // devices' busy time and the threads whose launches block.
  std::atomic<int> part{0};
  auto work = [&] {
    for (int mine = part++; mine < 3; mine = part++) mine == 0 ? steps() : mine == 1 ? index_ops() : devices();
  };
  detail::run_on_threads(std::min(threads, 2u), work);
  detail::build_idle_ledger(timeline, names, analysis, busy, threads);
  detail::build_step_ledger(timeline, names, analysis);
  return analysis;
}

namespace {

bool is_step_marker(const Timeline& timeline, EventIndex i) { return timeline.name(i).starts_with("ProfilerStep#"); }

bool is_call(const Events& events, EventIndex i) {
  return i < events.size() && (events.kind[i] == EventKind::Runtime || events.kind[i] == EventKind::Driver);
}

// Host and GPU timestamps come from two clocks that Kineto lines up to within microseconds, not exactly
// (up to about 10 µs between runs of the same machine): relations between a call's and its op's times are
// only read with this much slack, and durations, which no offset changes, decide.
constexpr int64_t kClockOffsetNs = 20'000;
constexpr int64_t kRoundingNs = 1'000;  // each side rounds to µs on its own
// A kernel this long outlasts any launch call that does not wait for it.
constexpr int64_t kLongKernelNs = 50'000;

// The call lasted at least as long as its op and the op ran inside it, up to the clocks' offset: what a
// call that waits for its op looks like, whatever the offset.
bool spans(const Events& events, EventIndex call, EventIndex op) {
  return events.dur_ns[call] + kRoundingNs >= events.dur_ns[op] &&
         events.ts_ns[op] + kClockOffsetNs >= events.ts_ns[call] && events.end_ns(op) <= events.end_ns(call) + kClockOffsetNs;
}

// Copies whose name says pinned memory, or device to device, never block the call; pageable ones do, and
// so may copies whose name does not say (older traces, ROCm).
bool synchronous_copy(const Timeline& timeline, EventIndex op) {
  if (timeline.events.kind[op] != EventKind::Memcpy) return false;
  const std::string_view name = timeline.name(op);
  return name.find("Pinned") == std::string_view::npos && name.find("Device -> Device") == std::string_view::npos;
}

}  // namespace

// Only launches of long kernels tell: a call that does not wait returns within microseconds, long before
// such a kernel ends; one that waits spans it. Tiny kernels on an idle GPU end within their launch call
// either way (and a few microseconds of clock offset decide whether they seem to), so a thread that
// launches no long kernel is not taken to block.
std::vector<uint8_t> blocking_launch_tracks(const Timeline& timeline) {
  const Events& events = timeline.events;
  std::vector<uint32_t> long_launches(timeline.tracks.size(), 0), spanned(timeline.tracks.size(), 0);
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (!is_call(events, i)) continue;
    const EventIndex op = events.launch[i];
    if (op == kNone || events.kind[op] != EventKind::Kernel || events.dur_ns[op] < kLongKernelNs) continue;
    if (events.track[i] >= long_launches.size()) continue;
    ++long_launches[events.track[i]];
    if (spans(events, i, op)) ++spanned[events.track[i]];
  }
  std::vector<uint8_t> blocking(timeline.tracks.size(), 0);
  for (size_t t = 0; t < blocking.size(); ++t) blocking[t] = long_launches[t] > 0 && 2 * spanned[t] >= long_launches[t];
  return blocking;
}

bool Analysis::call_waits_for_op(EventIndex i) const {
  const Events& events = timeline->events;
  if (!is_call(events, i)) return false;
  const EventIndex op = events.launch[i];
  if (op == kNone || !is_gpu_activity(events.kind[op]) || !spans(events, i, op)) return false;
  const uint32_t track = events.track[i];
  return (track < blocking_launches.size() && blocking_launches[track]) || synchronous_copy(*timeline, op);
}

KernelFamily Analysis::family_of(EventIndex i) const {
  const Events& events = timeline->events;
  if (i >= events.size() || events.kind[i] != EventKind::Kernel) return KernelFamily::Other;
  const StringId name = events.name[i];
  return name < kernel_family.size() ? kernel_family[name] : KernelFamily::Other;
}

EventIndex Analysis::cpu_op_of(EventIndex i) const {
  const Events& events = timeline->events;
  EventIndex start = detail::host_side(*this, i);
  if (start == kNone) return kNone;
  auto innermost_op = [&](EventIndex e, EventIndex above) {
    return events.kind[e] == EventKind::CpuOp && !is_step_marker(*timeline, e) ? e : above;
  };
  // Usually a few levels up; only deep nestings pay for the memo (the levels passed hold no op).
  EventIndex enclosing = kNone, above = start;
  for (int level = 0; above != kNone && enclosing == kNone && level < 64; ++level, above = events.parent[above]) {
    enclosing = innermost_op(above, kNone);
  }
  if (enclosing == kNone && above != kNone) {
    std::lock_guard lock(*enclosing_cpu_op_lock);
    enclosing = detail::derive_down(events, above, enclosing_cpu_op, kNone, innermost_op);
  }
  if (enclosing != kNone) return enclosing;
  // Not nested (another thread, or a trace without nesting): the op that shares its External id.
  return cpu_op_by_external_id.find(events.external_id[start]);
}

std::vector<EventIndex> Analysis::op_chain(EventIndex i) const {
  const Events& events = timeline->events;
  std::vector<EventIndex> chain;
  EventIndex start = detail::host_side(*this, i);
  if (start == kNone) return chain;
  auto collect = [&](EventIndex from) {
    for (EventIndex e = from; e != kNone; e = events.parent[e]) {
      EventKind kind = events.kind[e];
      if ((kind == EventKind::CpuOp || kind == EventKind::UserAnnotation) && !is_step_marker(*timeline, e)) {
        chain.push_back(e);
      }
    }
  };
  collect(start);
  if (chain.empty()) {
    EventIndex op = cpu_op_of(start);
    if (op != kNone) collect(op);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

int64_t Analysis::idle_ns(IdleCause cause) const {
  int64_t total = 0;
  for (const IdleGap& gap : idle) {
    if (gap.cause == cause) total += gap.duration_ns();
  }
  return total;
}

int64_t Analysis::total_idle_ns() const {
  int64_t total = 0;
  for (const IdleGap& gap : idle) total += gap.duration_ns();
  return total;
}

double Analysis::gpu_bound_ns_per_step() const {
  double total = 0;
  size_t count = 0;
  for (uint32_t s = 0; s < step_ledger.size(); ++s) {
    if (!is_steady(s)) continue;
    total += static_cast<double>(step_ledger[s].gpu_bound_ns);
    ++count;
  }
  return count > 0 ? total / static_cast<double>(count) : 0.0;
}

size_t Analysis::steady_step_count() const {
  size_t count = 0;
  for (const Step& step : steps) count += step.warmup || step.partial ? 0 : 1;
  return count;
}

size_t Analysis::warmup_step_count() const {
  size_t count = 0;
  for (const Step& step : steps) count += step.warmup ? 1 : 0;
  return count;
}

double Analysis::step_period_ns() const {
  double total = 0;
  size_t count = 0;
  for (const Step& step : steps) {
    if (step.warmup || step.partial) continue;
    total += static_cast<double>(step.period_ns);
    ++count;
  }
  return count == 0 ? 0.0 : total / static_cast<double>(count);
}

double Analysis::median_step_ns() const {
  std::vector<int64_t> durations;
  durations.reserve(steps.size());
  for (const Step& step : steps) {
    if (!step.warmup && !step.partial) durations.push_back(step.period_ns);
  }
  if (durations.empty()) return 0;
  std::sort(durations.begin(), durations.end());
  size_t n = durations.size();
  if (n % 2 == 1) return static_cast<double>(durations[n / 2]);
  return (static_cast<double>(durations[n / 2 - 1]) + static_cast<double>(durations[n / 2])) / 2.0;
}

}  // namespace ptadvise
