// What-if: the dependency graph of a trace's steps, its discrete-event replay, the critical path, and
// fixes as graph transforms. Uses trace/ only; knows nothing of rules or printers (docs/WHATIF.md).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise::whatif {

// What a node of the critical path spends its time on.
enum class Category : uint8_t { Compute, Communication, Copy, Host, Sync, DataLoader };
inline constexpr size_t kCategoryCount = 6;
// "compute", "communication", "copies", "host", "sync", "data loader"
std::string_view to_string(Category category);

enum class NodeKind : uint8_t {
  HostWork,  // time inside a CPU op, Python frame or annotation, outside runtime calls
  HostGap,   // time on a thread inside no traced event (Python, GC) or only the step marker
  Call,      // a runtime/driver call that does not block (launches, queries, allocations)
  HostWait,  // a runtime/driver call that blocks the host until GPU work ends
  GpuOp,     // a kernel, memcpy or memset on its stream
};

struct Node {
  int64_t start_ns = 0;  // measured
  int64_t dur_ns = 0;    // measured
  // Replayed duration of the node itself. Host waits: the call's own cost; the wait comes from its edges.
  int64_t work_ns = 0;
  EventIndex event = kNone;  // innermost event (the call, op or GPU op); kNone for a gap
  uint32_t lane = 0;
  uint32_t step = kNone;
  NodeKind kind = NodeKind::HostGap;
  Category category = Category::Host;
  bool anchored = false;  // starts no earlier than its measured start (first node of a lane, unlaunched GPU op)
};

enum class EdgeKind : uint8_t {
  Order,        // program order on a thread, stream order on a GPU stream
  Launch,       // runtime call start -> GPU op start, delay = launch latency
  Wait,         // GPU op end -> end of the host wait draining it, delay = the wait's tail
  StreamEvent,  // cudaEventRecord'ed op end -> first op after cudaStreamWaitEvent on another stream
  Thread,       // a helper thread's gap ends where the main thread was at that moment (offset delay)
  GraphLaunch,  // cudaGraphLaunch start -> the graph's first kernel (ops without their own launch call)
};

// Vertices: 2 * node is the node's start, 2 * node + 1 its end.
struct Edge {
  uint32_t from = 0;  // vertex
  uint32_t to = 0;    // vertex
  int64_t delay_ns = 0;
  EdgeKind kind = EdgeKind::Order;
  // A GPU gap before an op that no traced call launched (nor a CUDA-graph launch): what held the GPU is
  // outside the trace, so the critical path charges the gap to the host, not to the op after it.
  bool cause_untraced = false;
};

struct Lane {
  uint32_t track = kNone;  // Timeline track
  bool gpu = false;
  std::vector<uint32_t> nodes;  // in order
};

// The steps a graph holds and the steps whose periods its replay measures (indices into Analysis::steps,
// inclusive). The graph holds one step more on each side of the measured ones when there is one: the
// step before sets the state the first measured step starts from, the step after ends the last period.
struct StepWindow {
  uint32_t first = 0, last = kNone;                  // steps in the graph
  uint32_t measured_first = 0, measured_last = kNone;  // steady steps whose periods are replayed
  bool sampled = false;                              // fewer than all steady steps (docs/WHATIF.md "Cost")
  bool holds(uint32_t step) const { return step >= first && step <= last; }
  bool measures(uint32_t step) const { return step >= measured_first && step <= measured_last; }
};

// What one replay covers (docs/WHATIF.md, "Cost"). A trace whose steps hold at most kReplayEventBudget
// events is replayed whole. A bigger one is replayed over a window of consecutive steady steps that holds
// about that many events, and at least kReplayMinSteps steps: the window whose measured mean period is
// closest to the trace's. The sampling error (the window's measured mean against the trace's) is
// reported with the prediction.
inline constexpr size_t kReplayEventBudget = 65536;
inline constexpr size_t kReplayMinSteps = 8;

// Every step when the steps hold at most `event_budget` events, else the representative window.
StepWindow replay_window(const Analysis& analysis, size_t event_budget = kReplayEventBudget);

struct Graph {
  const Analysis* analysis = nullptr;
  StepWindow window;
  std::vector<Node> nodes;
  std::vector<Edge> edges;              // sorted by `to`
  std::vector<uint32_t> incoming;       // per vertex + 1: edges[incoming[v] .. incoming[v+1]) end at v
  std::vector<uint32_t> outgoing;       // per vertex + 1: out_edges[outgoing[v] .. outgoing[v+1]) leave v
  std::vector<uint32_t> out_edges;      // edge indices by `from`
  std::vector<Lane> lanes;
  uint32_t main_lane = kNone;           // the lane of Analysis::main_track
  std::vector<uint32_t> node_of_event;  // per event: its node (calls, GPU ops; the first segment of a CPU op)
  std::vector<uint32_t> lane_of_track;  // per Timeline track: its lane, else kNone
  std::vector<uint32_t> launched_by;    // per node: the call node that launched this GPU op, else kNone
  std::vector<uint32_t> first_launched; // per call node: the first GPU op node it launched, else kNone
  std::vector<uint32_t> next_launched;  // per GPU op node: the next GPU op node of the same call, else kNone
  // Vertices in dependency order (Kahn's), then those left in a dependency cycle (timestamps that
  // contradict each other) in measured order; `ordered` counts the first kind. Fixes switch edges off but
  // never add any, so one order serves every replay of the graph.
  std::vector<uint32_t> order;
  size_t ordered = 0;
  size_t inferred_waits = 0;            // host waits whose drained GPU work was found
  size_t elastic_loader_waits = 0;      // loader-worker waits that end with the GPU's progress
};

// The graph of the window's steps (all steps by default, warm-up included, so the steady steps start
// from the state the GPU was in). Linear in the events of those steps.
Graph build_graph(const Analysis& analysis, const StepWindow& window);
Graph build_graph(const Analysis& analysis);  // every step

// ---- transforms ------------------------------------------------------------------------------------

// Primitives a fix is made of (docs/WHATIF.md). Each applies to the nodes of a set of events: host
// events cover their time on their thread (and the GPU work launched in it); GPU events are themselves.
enum class Primitive : uint8_t {
  Remove,        // the nodes take no time (the Python around them stays: gaps are their own nodes)
  Scale,         // GPU ops take factor × their time (factor from a table or given)
  MakeAsync,     // host waits stop waiting (they keep their own cost)
  Fuse,          // per step, the GPU kernels become one with their summed time; the other launches go
  Overlap,       // communication kernels leave their stream's order: they overlap the compute after them
  Background,    // host time moves to `workers` background lanes that run ahead (data loading)
  Batch,         // the batch grows by a factor: the selected (batch-proportional) GPU ops take factor × their
                 // time, host time stays; the prediction is per sample (a step then holds factor × the samples)
};
std::string_view to_string(Primitive primitive);
std::optional<Primitive> parse_primitive(std::string_view text);

// Scale factor tables (documented in docs/WHATIF.md).
enum class ScaleTable : uint8_t { None, TensorCores, PinnedCopy };
std::optional<ScaleTable> parse_scale_table(std::string_view text);

struct TransformSpec {
  Primitive primitive = Primitive::Remove;
  ScaleTable table = ScaleTable::None;
  double factor = 1.0;  // Scale without a table; Batch: the batch factor (0: from the memory headroom)
  double memory_target = 0.8;  // Batch without a factor: the share of GPU memory the larger batch may allocate
  int workers = 4;      // Background: worker processes (num_workers)
  int prefetch = 2;     // Background: batches each worker has ready when the window opens (prefetch_factor)
  // Background: which host time moves. Events: all of the selected events' host time. ChargedIdle: only the
  // launching thread's time inside the idle stretches the step ledger charged to the finding
  // (Fix::idle_gaps), i.e. the host work the GPU waited for, not the rest of the ops it ran in.
  enum class HostTime : uint8_t { Events, ChargedIdle } host_time = HostTime::Events;
  // What the transform touches of the selected events: the GPU work they launched only ("gpu"), their
  // host time only ("host"), or both (default).
  bool host = true;
  bool gpu = true;
  // Which events it applies to: the selected events themselves, or the outermost CPU op each one runs
  // under (`.cuda()` is aten::to with its copy and its sync inside).
  enum class Scope : uint8_t { Event, OuterOp } scope = Scope::Event;
};

struct Fix {
  TransformSpec spec;
  std::vector<EventIndex> events;
  std::string label;  // rule id or finding, for messages
  std::string method;  // what the fix changes, phrased for the user
  std::vector<uint32_t> idle_gaps = {};  // HostTime::ChargedIdle: the finding's stretches, indices into Analysis::idle
};

// ---- replay ----------------------------------------------------------------------------------------

struct CriticalItem {
  std::string name;  // event name ("(host gap)" for untraced host time, "(launch latency)", ...)
  Category category = Category::Host;
  double ms_per_step = 0;  // time on the critical path per steady step
};

struct CriticalSegment {  // one piece of the critical path, in replayed time
  uint32_t node = kNone;  // kNone for an edge delay
  uint32_t step = kNone;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  Category category = Category::Host;
  EdgeKind via = EdgeKind::Order;  // for an edge delay: which edge
};

struct ReplayResult {
  double measured_step_ms = 0;  // mean measured period of the steady steps replayed (the window's)
  double replayed_step_ms = 0;  // mean replayed period of the same steady steps
  size_t steady_steps = 0;      // steady steps replayed
  std::array<double, kCategoryCount> critical_ms{};  // per steady step, by category
  std::vector<CriticalItem> critical_top;            // largest first
  std::vector<CriticalSegment> critical_path;        // steady steps, in time order (PathDetail::Pieces)
  std::vector<int64_t> vertex_ns;                    // per vertex (Graph's numbering), replayed
  size_t unordered = 0;  // vertices left in a dependency cycle (replayed in measured order)
  int64_t start_ns(uint32_t node) const { return vertex_ns[2 * size_t{node}]; }
  int64_t end_ns(uint32_t node) const { return vertex_ns[2 * size_t{node} + 1]; }
};

// How much of the critical path a replay keeps. The pieces cost 32 bytes each (a trace of 200k events
// has hundreds of thousands), and only a drawing of the path (`check --annotate`) needs them.
enum class PathDetail : uint8_t {
  None,    // the periods and replayed times only
  Totals,  // and critical_ms, critical_top
  Pieces,  // and critical_path
};

// Replays the graph with the fixes applied (none: the unchanged graph). Linear in nodes and edges.
ReplayResult replay(const Graph& graph, const std::vector<Fix>& fixes = {}, PathDetail path = PathDetail::Totals);

// Measured, replayed, and why they differ when they differ by more than 3% (empty otherwise).
std::string replay_discrepancy(const Graph& graph, const ReplayResult& result);

// The batch factor a `batch` fix applies: its own factor; else the smallest power of two at which the
// GPU work it scales (linearly) fills the measured step, beyond which a larger batch adds no throughput
// under that model, and never more than the memory headroom allows (batch_headroom). 1 when nothing tells.
struct BatchFactor {
  double factor = 1.0;
  double memory_limit = 1.0;  // batch_headroom (0 when the fix gives its own factor)
  double gpu_ms = 0;          // per steady step, the GPU work it scales
  double fixed_gpu_ms = 0;    // of which this much does not grow: each kernel's fixed part
  double kernel_fixed_us = 0;  // a kernel's fixed part: the steady steps' shortest kernel
};
BatchFactor batch_factor(const Graph& graph, const Fix& fix);

// What the steady steps allocate on the GPU ([memory] events, profile_memory=True): `held` is the least
// allocated at any point of them (weights, optimizer state: memory a larger batch does not grow), `peak`
// the most; peak - held is what one step's batch adds (activations, the batch itself).
struct MemoryUse {
  int64_t held = 0, peak = 0, device_bytes = 0;
  bool known() const { return device_bytes > 0 && peak > held && held >= 0; }
};
MemoryUse memory_use(const Analysis& analysis);
// The largest power of two f with held + f * (peak - held) <= target * device memory; 1 when unknown.
double batch_headroom(const MemoryUse& use, double target);

// This trace's pinned-copy bandwidth per direction, measured once for all the ops a transform scales.
struct CopyRates {
  std::optional<double> host_to_device, device_to_host;  // bytes per ns; 0 when the trace has no pinned copy
};

// Factor of a scale table for a GPU op of this trace (1 when the table has no entry for it). `rates`
// caches the trace's measured bandwidths between calls.
double table_factor(const Timeline& timeline, ScaleTable table, EventIndex gpu_op, CopyRates* rates = nullptr);

// ---- jobs: a rank's replay as a function of when its collectives end -------------------------------

// In a job every rank leaves a collective when the last one has arrived and the transfer is done, so the
// end of a collective is the job's, not one rank's. A rank's replay is max-plus: each instant is the
// latest of constants (anchors) and of other instants plus fixed delays. So every instant the job needs
// (a collective's start, a step's start) is max(free_ns, max over terms of end[source] + delay_ns), where
// end[] are the ends of the rank's collectives as the job sets them (docs/WHATIF.md, "Jobs").
inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
struct JoinTerm {
  uint32_t source = 0;   // index into the collective nodes given to join_model
  int64_t delay_ns = 0;  // longest path from that collective's end, through no other collective's end
};
struct JoinTime {
  int64_t free_ns = kNoTime;     // what the rank's own work and anchors allow (kNoTime: none)
  std::vector<JoinTerm> terms;   // dominated terms left out
  // Evaluates the instant for given collective ends (kNoTime for an end not known).
  int64_t at(const std::vector<int64_t>& ends) const;
};
// One step of the replay window, as replay() measures periods: the host instant where the step starts
// on the main thread and the step's first (launched) GPU op.
struct JoinStep {
  uint32_t step = kNone;   // index into Analysis::steps
  JoinTime host_start;     // kNoTime free and no terms when the trace has no main thread
  JoinTime gpu_first;      // kNoTime free and no terms when the step has no GPU op
  bool gpu_span_only = false;  // Step::gpu_span_only: the GPU side alone sets its period
};
struct JoinModel {
  std::vector<JoinTime> arrival;  // per collective node: its start
  std::vector<JoinStep> steps;    // the window's measured steps, and the step after them when the graph holds it
  // Evaluated at the collective ends of the graph's own replay (with the same fixes), the model gives back
  // that replay's instants. False only when some path from a collective passes the next step without
  // meeting another collective's end and following every path to the end was too costly.
  bool exact = false;
};
// The join model of the graph with `fixes` applied; `collectives` are GPU op or host nodes. A term's
// path stops at the step after its collective's (or at the next step with a collective), where later
// instants depend on it through the collectives in between; when the model then fails its self-check
// (JoinModel::exact), every path is followed to the end if collectives x vertices <= 2^26. Linear in the
// graph per collective. `replayed`: the graph's replay with the same fixes when the caller already has it
// (its start and end times are all the model reads); otherwise the model replays the graph itself.
JoinModel join_model(const Graph& graph, const std::vector<uint32_t>& collectives, const std::vector<Fix>& fixes = {},
                     const ReplayResult* replayed = nullptr);

}  // namespace ptadvise::whatif
