// analyze(): the orchestration of the analyses, and the lookups rules use on an Analysis.
#include "ptadvise/analysis.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <charconv>
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

namespace {

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
EventIndex host_side(const Analysis& analysis, EventIndex i) {
  const Events& events = analysis.timeline->events;
  if (i == kNone || i >= events.size()) return kNone;
  if (!is_gpu_side(events.kind[i])) return i;
  if (events.launch[i] != kNone) return events.launch[i];
  return analysis.cpu_op_by_external_id.find(events.external_id[i]);
}

}  // namespace

KernelFamily Analysis::family_of(EventIndex i) const {
  const Events& events = timeline->events;
  if (i >= events.size() || events.kind[i] != EventKind::Kernel) return KernelFamily::Other;
  const StringId name = events.name[i];
  return name < kernel_family.size() ? kernel_family[name] : KernelFamily::Other;
}

EventIndex Analysis::cpu_op_of(EventIndex i) const {
  const Events& events = timeline->events;
  EventIndex start = host_side(*this, i);
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
    enclosing = derive_down(events, above, enclosing_cpu_op, kNone, innermost_op);
  }
  if (enclosing != kNone) return enclosing;
  // Not nested (another thread, or a trace without nesting): the op that shares its External id.
  return cpu_op_by_external_id.find(events.external_id[start]);
}

std::vector<EventIndex> Analysis::op_chain(EventIndex i) const {
  const Events& events = timeline->events;
  std::vector<EventIndex> chain;
  EventIndex start = host_side(*this, i);
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

std::optional<SourceLocation> parse_python_frame(std::string_view frame) {
  while (!frame.empty() && std::isspace(static_cast<unsigned char>(frame.front()))) frame.remove_prefix(1);
  while (!frame.empty() && std::isspace(static_cast<unsigned char>(frame.back()))) frame.remove_suffix(1);
  // "file.py(42): function", or "file.py(42)" without a function.
  size_t close = frame.find("): ");
  std::string_view function;
  if (close != std::string_view::npos) {
    function = frame.substr(close + 3);
  } else if (!frame.empty() && frame.back() == ')') {
    close = frame.size() - 1;
  } else {
    return std::nullopt;
  }
  size_t open = frame.rfind('(', close);
  if (open == std::string_view::npos || open == 0 || open + 1 >= close) return std::nullopt;
  std::string_view digits = frame.substr(open + 1, close - open - 1);
  int line = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), line);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  SourceLocation location;
  location.file = std::string(frame.substr(0, open));
  location.line = line;
  location.function = std::string(function);
  return location;
}

bool is_library_frame(std::string_view file) {
  if (file.empty() || file.front() == '<') return true;  // <built-in ...>, <frozen ...>, <string>
  return file.starts_with("torch/") || file.find("/torch/") != std::string_view::npos ||
         file.find("site-packages/") != std::string_view::npos ||
         file.find("dist-packages/") != std::string_view::npos ||
         file.find("/lib/python3") != std::string_view::npos || file.starts_with("lib/python3");
}

namespace {

std::optional<SourceLocation> user_frame(std::string_view frame) {
  auto location = parse_python_frame(frame);
  if (!location || is_library_frame(location->file)) return std::nullopt;
  return location;
}

// `Call stack` lists frames innermost first, separated by ";" (older writers add "\r\n" after it).
std::optional<SourceLocation> first_user_frame_of_stack(std::string_view stack) {
  while (!stack.empty()) {
    size_t cut = stack.find(';');
    std::string_view frame = stack.substr(0, cut);
    if (auto location = user_frame(frame)) return location;
    if (cut == std::string_view::npos) break;
    stack.remove_prefix(cut + 1);
  }
  return std::nullopt;
}

// The location an event names by itself: a python_function's own frame, else the first user frame of its
// `Call stack` (a frame recorded as a range by a capture without the Python tracer carries its caller's stack).
std::optional<SourceLocation> own_source(const Timeline& timeline, EventIndex e) {
  const Events& events = timeline.events;
  const EventKind kind = events.kind[e];
  if (kind == EventKind::PythonFunction) {
    if (auto location = user_frame(timeline.name(e))) return location;
  } else if (kind != EventKind::CpuOp && kind != EventKind::UserAnnotation) {
    return std::nullopt;
  }
  if (events.args_length[e] == 0) return std::nullopt;
  auto stack = timeline.arg_string(e, "Call stack");
  if (!stack || stack->empty()) return std::nullopt;
  return first_user_frame_of_stack(*stack);
}

// The first user frame up the `Python parent id` links from an outermost python_function, or kNone.
EventIndex user_frame_through_parent_ids(const Analysis& analysis, EventIndex outermost_python) {
  const Timeline* timeline = analysis.timeline;
  const Events& events = timeline->events;
  auto& python_by_id = analysis.python_by_id;
  if (!python_by_id) {
    python_by_id.emplace();
    for (EventIndex e = 0; e < events.size(); ++e) {
      if (events.kind[e] != EventKind::PythonFunction) continue;
      if (auto id = timeline->arg_int(e, "Python id")) python_by_id->emplace(*id, e);
    }
  }
  EventIndex frame = outermost_python;
  for (int guard = 0; guard < 10000; ++guard) {
    auto parent_id = timeline->arg_int(frame, "Python parent id");
    if (!parent_id) break;
    auto it = python_by_id->find(*parent_id);
    if (it == python_by_id->end() || it->second == frame) break;
    frame = it->second;
    if (user_frame(timeline->name(frame))) return frame;
  }
  return kNone;
}

}  // namespace

std::optional<SourceLocation> Analysis::user_source(EventIndex i) const {
  const EventIndex named_by = user_source_event(i);
  if (named_by == kNone) return std::nullopt;
  return own_source(*timeline, named_by);
}

EventIndex Analysis::user_source_event(EventIndex i) const {
  const Events& events = timeline->events;
  EventIndex start = host_side(*this, i);
  if (start == kNone) return kNone;
  std::lock_guard lock(*source_lock);
  // The innermost event naming a location wins; the outermost python_function is where `Python parent id`
  // links go on when none does.
  const auto [from, python] = derive_down(
      events, start, source_chain, SourceChain{kNone, kNone}, [&](EventIndex e, SourceChain above) {
        if (above.outermost_python == kNone && events.kind[e] == EventKind::PythonFunction) above.outermost_python = e;
        if (own_source(*timeline, e)) above.innermost_source = e;
        return above;
      });
  if (from != kNone) return from;
  if (python == kNone) return kNone;
  // The nesting ended (frames cut by the trace window): continue through `Python parent id` to a
  // python_function whose own frame is a user frame (own_source reads it as such).
  auto [found, inserted] = source_parent_frame.try_emplace(python, kNone);
  if (inserted) found->second = user_frame_through_parent_ids(*this, python);
  return found->second;
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
