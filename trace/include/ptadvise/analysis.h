// Whole-trace analyses on a loaded Timeline: steps, GPU busy/idle, and the idle-time ledger that
// attributes every GPU idle gap inside steps to one host-side cause. Rules and the summary read this.
#pragma once

#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptadvise/kernel_class.h"
#include "ptadvise/timeline.h"

namespace ptadvise {

enum class StepSource { ProfilerStep, Annotations, Inferred, WholeWindow };
// "ProfilerStep", "annotations", "inferred", "whole-window"
std::string_view to_string(StepSource source);

struct Step {
  int64_t number = 0;         // N of ProfilerStep#N, else 0-based index
  int64_t start_ns = 0;       // CPU extent (marker or inferred period)
  int64_t end_ns = 0;
  int64_t gpu_start_ns = -1;  // first..last GPU op launched inside the step (-1 when none)
  int64_t gpu_end_ns = -1;
  EventIndex marker = kNone;  // the ProfilerStep#N event (also for each iteration split out of it)
  // The iteration period: host start to the next step's host start, or the GPU-side period (first GPU op
  // to the next step's first GPU op) when that is longer (the GPU is the bottleneck and the host runs
  // ahead). The last step, which has no successor, uses its CPU interval or its GPU extent.
  int64_t period_ns = 0;
  // Where the period is measured from: the host start, or — when the GPU sets the pace (its median period
  // is the longer) — the start of the step's first launched GPU op. Ledger windows run from here.
  int64_t period_start_ns = 0;
  // How the period was taken, so that a replay measures it the same way: where its host side ends when
  // there is no next step (end_ns, or a lone step's last event when the profiler's stop closed it late),
  // and whether it is the GPU span alone (a whole-window step: first GPU op to the end of the last).
  int64_t host_end_ns = std::numeric_limits<int64_t>::min();  // min: not measured, end_ns
  bool gpu_span_only = false;
  bool warmup = false;   // a leading step dominated by one-off work: excluded from every per-step figure
  bool partial = false;  // the last step, cut short by the end of profiling: excluded likewise
  // Where an annotation iteration's anchor ends (its optimizer step, its range), -1 when it has none. The
  // last iteration ends there, not at a next iteration's start: its period lacks what follows the anchor
  // (logging, a sync, Python) in every other period.
  int64_t anchor_end_ns = -1;
  int64_t span_start() const;  // min(start, gpu_start)
  int64_t span_end() const;    // max(end, gpu_end)
  int64_t duration_ns() const { return span_end() - span_start(); }
  int64_t period_host_end() const { return host_end_ns != std::numeric_limits<int64_t>::min() ? host_end_ns : end_ns; }
};

struct Interval {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};
// Interval sets as the analyses keep them: merge sorts and unites in place (the result is disjoint and sorted);
// covered_ns is the length of such a set inside [start, end).
void merge_intervals(std::vector<Interval>& intervals);
int64_t covered_ns(const std::vector<Interval>& merged, int64_t start, int64_t end);

// GraphCapture: the launching thread is recording CUDA/HIP graphs (stream capture): the kernels it
// "launches" are recorded, not run, so the GPU idles by design and nothing is there to recover.
// ExternalWait: the host is blocked in a synchronising call while the GPU idles, but not because the host
// starved it: the op that ends the gap was queued before the call began (over 100 us earlier), or no traced
// GPU work completes during the call (over 1 ms). The GPU waits for work the trace does not show (queued
// before profiling started, another process, an untraced stream); removing the call gives nothing back.
// WarmUp: the host does one-off work: module loading, or a runtime call over 1 ms that neither
// synchronises, copies nor allocates (a first launch loading its kernel's code, context or stream creation).
// It does not recur in later iterations. (Allocations can recur every step: they stay the host's work.)
enum class IdleCause : uint8_t { Sync, DataLoader, LaunchBound, CpuWork, Untraced, GraphCapture, ExternalWait, WarmUp };
inline constexpr IdleCause kIdleCauses[] = {IdleCause::Sync,     IdleCause::DataLoader,   IdleCause::LaunchBound,
                                            IdleCause::CpuWork,  IdleCause::Untraced,     IdleCause::GraphCapture,
                                            IdleCause::ExternalWait, IdleCause::WarmUp};
inline constexpr size_t kIdleCauseCount = std::size(kIdleCauses);
// "sync", "data-loader", "launch-bound", "cpu-work", "untraced", "graph-capture", "external-wait", "warm-up"
std::string_view to_string(IdleCause cause);

// One GPU idle gap inside a step, charged once to its cause. `culprit` is the host event responsible
// (the sync call's enclosing CPU op, the DataLoader __next__ annotation, the CPU op running, ...).
// 32 bytes (the ledger of a long trace holds hundreds of thousands): the small fields before `culprit`.
struct IdleGap {
  int32_t device = -1;
  uint32_t step = kNone;  // index into Analysis::steps
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  IdleCause cause = IdleCause::Untraced;
  // What the host thread was doing, for the refill after a blocking call (docs/ANALYSIS.md): `launching`
  // — inside a launch call, the GPU gets work once it returns; `queues_work` — the launch itself, Python
  // glue with nothing recorded, or an op or frame that launches GPU work, i.e. on the way to the next
  // launch. Host work that launches nothing (preprocessing, decoding) has neither.
  bool launching = false;
  bool queues_work = false;
  EventIndex culprit = kNone;
  int64_t duration_ns() const { return end_ns - start_ns; }
};
static_assert(sizeof(IdleGap) == 32);

// The step's side of the ledger beside its idle gaps: GPU busy time and the bound on what faster GPU work
// (a faster kernel, a removed copy) can take off the step (docs/ANALYSIS.md, "The step ledger").
struct StepLedger {
  int64_t window_ns = 0;        // the step's ledger window
  int64_t busy_ns = 0;          // GPU busy inside it, all devices together
  int64_t host_period_ns = 0;   // host start to the next step's host start
  int64_t host_wait_ns = 0;     // of it, the launching thread waiting while the GPU was busy
  int64_t gpu_bound_ns = 0;     // min(busy, period - (host period - host wait)), at least 0
};

struct SourceLocation {
  std::string file;
  int line = 0;
  std::string function;
};

// CPU ops by their `External id`: a table sorted by id (a flat array: a map node per op cost more to build
// than the lookups it served). An id several ops carry finds the first of them in event order.
class CpuOpsByExternalId {
 public:
  CpuOpsByExternalId() = default;
  // (External id, op) pairs in event order; ids <= 0 are left out.
  explicit CpuOpsByExternalId(std::vector<std::pair<int64_t, EventIndex>> ops_in_event_order);
  EventIndex find(int64_t external_id) const;  // kNone when no op carries the id
  size_t size() const { return ops_.size(); }  // distinct ids

 private:
  std::vector<std::pair<int64_t, EventIndex>> ops_;  // ascending ids, one entry per id
};

struct Analysis {
  const Timeline* timeline = nullptr;
  StepSource step_source = StepSource::WholeWindow;
  std::string step_note;  // how steps were found, phrased for the user
  std::string warmup_note;  // why the leading steps count as warm-up; empty when none do
  std::string partial_note;  // why the last step is left out (Step::partial); empty when it is not
  // False when one-off work (warm-up, graph capture) fills at least half of the steady steps: the window
  // shows no steady state to measure per-step figures on, and no rule runs
  // (docs/ANALYSIS.md, "No steady state"). `steady_state_note` says why.
  bool steady_state = true;
  std::string steady_state_note;
  std::vector<Step> steps;
  // Per step: the part of its span the ledger covers. Spans of consecutive steps may overlap (the GPU
  // trails the CPU); windows never do, so no idle nanosecond belongs to two steps.
  std::vector<Interval> step_windows;
  std::vector<int32_t> devices;                 // GPU devices that have activity, sorted
  std::vector<std::vector<Interval>> busy;      // per entry of `devices`: merged kernel/memcpy/memset time
  std::vector<IdleGap> idle;                    // the ledger, sorted by (device, start)
  std::vector<StepLedger> step_ledger;          // per step: busy time and the GPU-time bound
  std::vector<uint32_t> event_step;             // per event: index into steps, or kNone
  uint32_t main_track = kNone;  // the CPU thread carrying the step markers, else the one launching most GPU work
  // Per track: whether the thread's kernel launches block (CUDA_LAUNCH_BLOCKING=1): at least half of its
  // launches of kernels of 50 µs or more span their kernel (docs/ANALYSIS.md, "Calls that wait").
  std::vector<uint8_t> blocking_launches;
  CpuOpsByExternalId cpu_op_by_external_id;  // CPU ops other than step markers, by `External id` (> 0)
  // Family of every kernel name (data/kernel_families.yaml plus the user's tables), indexed by StringId.
  std::vector<KernelFamily> kernel_family;

  uint32_t step_of(EventIndex i) const { return event_step[i]; }
  // The family of a kernel event (Other for every other kind of event).
  KernelFamily family_of(EventIndex i) const;
  // Innermost enclosing CPU op (skipping runtime/annotation layers) of a GPU op or runtime call.
  EventIndex cpu_op_of(EventIndex i) const;
  // Runtime/driver call `i` waited for the GPU op it launched: the op ran inside the call (up to the
  // offset between the host's and the GPU's clocks), on a thread whose launches block or for a copy the
  // driver does before returning (from or to pageable memory). A tiny kernel on an idle stream can end
  // before its launch call returns without the call waiting for it.
  bool call_waits_for_op(EventIndex i) const;
  // Enclosing chain from outermost to innermost CPU op/annotation names, for display.
  std::vector<EventIndex> op_chain(EventIndex i) const;
  // First user frame (not torch, site-packages or the standard library) from the python_function
  // tree or the `Call stack` arg; nullopt when the trace has no stacks.
  std::optional<SourceLocation> user_source(EventIndex i) const;
  // The event whose own frame or `Call stack` names user_source(i), kNone when none does: events that share
  // it share their source, so a caller can build the text once per such event (two may name the same line).
  EventIndex user_source_event(EventIndex i) const;
  // Idle time of the ledger charged to `cause` (all devices, all steps), in ns.
  int64_t idle_ns(IdleCause cause) const;
  // Steady-state steps: every step that is not warm-up. Per-step figures divide by their count and
  // percentages by their mean period, so numerator and denominator describe the same steps.
  size_t steady_step_count() const;
  size_t warmup_step_count() const;
  bool is_steady(uint32_t step) const { return step < steps.size() && !steps[step].warmup && !steps[step].partial; }
  double step_period_ns() const;  // mean period of the steady-state steps (0 without steps)
  double median_step_ns() const;  // median period of the steady-state steps
  // Total GPU idle inside the step windows (all devices): the sum of the ledger.
  int64_t total_idle_ns() const;
  // Mean over the steady steps of StepLedger::gpu_bound_ns: what faster GPU work can take off a step.
  double gpu_bound_ns_per_step() const;

  // `Python id` -> python_function event, built on first use by user_source().
  mutable std::optional<std::unordered_map<int64_t, EventIndex>> python_by_id;
  // Filled as asked, per event (memos: every nesting is walked once, not once per event in it).
  // cpu_op_of(): the innermost enclosing CPU op, or kNone.
  mutable std::vector<std::optional<EventIndex>> enclosing_cpu_op;
  // cpu_op_of() may be called from several threads at once (the idle ledger's, the rules'): it fills its
  // memo under this lock.
  std::shared_ptr<std::mutex> enclosing_cpu_op_lock = std::make_shared<std::mutex>();
  // user_source(): the innermost event of the nesting whose own frame or `Call stack` names a location,
  // and the outermost python_function; then per such function the user frame its `Python parent id`
  // links lead to.
  struct SourceChain {
    EventIndex innermost_source;
    EventIndex outermost_python;
  };
  mutable std::vector<std::optional<SourceChain>> source_chain;
  mutable std::unordered_map<EventIndex, EventIndex> source_parent_frame;
  // user_source() may be called from several threads at once (the rules' selections are made on all
  // cores): it fills python_by_id, source_chain and source_parent_frame under this lock.
  std::shared_ptr<std::mutex> source_lock = std::make_shared<std::mutex>();
};

// Parses one Python frame "path/file.py(42): function"; nullopt when the text has no such shape.
std::optional<SourceLocation> parse_python_frame(std::string_view frame);
// True for frames of torch, site-/dist-packages, the standard library and built-ins.
bool is_library_frame(std::string_view file);

// `kernels` sorts kernel names into families (the shipped table unless the user extended it). `threads`: how
// many threads the idle ledger is charged on (0: one per core this process may run on); the analysis is
// the same on any number.
// Per track of `timeline`: whether its kernel launches block (Analysis::blocking_launches).
std::vector<uint8_t> blocking_launch_tracks(const Timeline& timeline);

Analysis analyze(const Timeline& timeline, const KernelClassifier& kernels = KernelClassifier::builtin(),
                 unsigned threads = 0);

// Figures of `ptadvise summary`; computed here, printed by the advisor's printers.
struct KernelStat {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
};
struct IdleShare {
  IdleCause cause = IdleCause::Untraced;
  double ms = 0;  // ledger time charged to the cause, all devices, all steps
};
// What one device did during the steady steps' windows, each moment counted once in this order: compute
// kernels, communication kernels (family `communication`: NCCL/RCCL, mostly waiting for peers), copies
// (memcpy, then memset), idle. Shares add up to 100; the ms figures are per steady step.
struct DeviceShare {
  int32_t device = -1;
  double compute_busy_pct = 0, communication_pct = 0, copy_pct = 0, idle_pct = 0;
  double compute_ms = 0, communication_ms = 0, copy_ms = 0, idle_ms = 0;  // per steady step
};

// Where one step's GPU time went (summed over devices), for the per-step strip chart of the HTML report.
struct StepBreakdown {
  int64_t number = 0;
  double period_ms = 0;
  bool steady = true;  // false for warm-up and a cut-short last step (left out of every other figure)
  double compute_ms = 0, communication_ms = 0, copy_ms = 0;  // copies and memsets
  double idle_ms[kIdleCauseCount] = {};  // the ledger by IdleCause, in enum order
};

struct Summary {
  std::string path;
  std::vector<DeviceInfo> devices;  // devices with activity (from deviceProperties when present)
  std::optional<int> rank;
  size_t step_count = 0;
  StepSource step_source = StepSource::WholeWindow;
  std::string step_note;
  size_t steady_steps = 0;   // steps the figures below describe: all but warm-up and a cut-short last step
  size_t warmup_steps = 0;
  bool last_step_partial = false;
  std::string partial_note;  // why (Analysis::partial_note)
  std::string warmup_note;
  std::string steady_state_note;  // Analysis::steady_state_note: empty when the steps show a steady state
  double step_period_ms = 0;  // mean iteration period of the steady steps
  double median_step_ms = 0;  // median and p90 of their periods
  double p90_step_ms = 0;
  double gpu_busy_pct = 0;  // union of kernel/memcpy/memset (all devices) over the steady steps' windows
  double span_ms = 0;       // total length of the steady steps' windows
  // Per-device shares of the steady windows (averaged over devices): compute kernels, communication
  // kernels, copies and memsets, idle. They add up to 100.
  double compute_busy_pct = 0, communication_pct = 0, copy_pct = 0, idle_pct = 0;
  // Breakdown of GPU time within the steady windows, in ms (per device, summed over devices).
  double compute_ms = 0, communication_ms = 0, memcpy_ms = 0, memset_ms = 0, idle_ms = 0;
  std::vector<DeviceShare> device_shares;  // the same split per device, in device order
  // Kernel time per steady step by family of data/kernel_families.yaml (all devices, overlaps counted twice).
  double family_ms_per_step[kKernelFamilyCount] = {};
  double kernels_per_step = 0;
  double tiny_kernel_pct = 0;  // kernels shorter than 10 us, % of kernel count
  int64_t kernel_count = 0;    // kernels inside steps
  std::vector<IdleShare> idle_causes;  // the ledger by cause, largest first, causes with time only
  std::vector<KernelStat> top_kernels;  // by total time
  std::vector<KernelStat> top_cpu_ops;  // by total (inclusive) time
  std::vector<StepBreakdown> steps;     // every step in order, in its ledger window
  LoadStats load;
};
Summary summarize(const Analysis& analysis, size_t top_n = 10);

// What the idle ledger could not charge to the traced program, when it is a large share of the step
// (5% or more): GPU idle with no host event (untraced), while graphs were recorded (graph-capture), while
// the GPU held queued work back (external-wait) or during one-off work (warm-up). One sentence each, for the trace's notes: no finding
// claims this time, so a clean result says where it went. First, when the window has no steady step
// (Analysis::steady_state), the note that says so and that no rule ran.
std::vector<std::string> unexplained_idle_notes(const Summary& summary);

// A trace with no kernel, copy or memset although its host launched GPU work, waited in synchronising
// calls (1 ms or more) on GPUs the trace lists, or it holds CUPTI range-profiler ranges: the GPU's activity
// was not recorded, and the rules that need it did not run. One sentence for the trace's notes; nullopt
// otherwise (a CPU-only profile says nothing). Looks at the GPU tracks first: no pass over the events of
// a trace with GPU activity.
std::optional<std::string> missing_gpu_activity_note(const Timeline& timeline);

}  // namespace ptadvise
