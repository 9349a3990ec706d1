// The transform primitives (docs/WHATIF.md): which nodes a fix touches, and how each primitive changes them.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "transform.h"

namespace ptadvise::whatif {
namespace {

struct Touched {
  std::vector<uint32_t> host;  // host nodes, in time order
  std::vector<uint32_t> gpu;   // GPU op nodes
};

void add_launched(const Graph& g, uint32_t call, std::vector<uint32_t>& gpu) {
  for (uint32_t op = g.first_launched[call]; op != kNone; op = g.next_launched[op]) gpu.push_back(op);
}

// The outermost CPU op above an event (a GPU op: above its launch call); the event itself without one.
EventIndex outer_op(const Events& ev, EventIndex e) {
  EventIndex current = is_gpu_side(ev.kind[e]) ? ev.launch[e] : e;
  EventIndex found = kNone;
  for (int depth = 0; current != kNone && depth < 256; ++depth) {
    if (ev.kind[current] == EventKind::CpuOp) found = current;
    current = ev.parent[current];
  }
  return found != kNone ? found : e;
}

// Host events cover their time on their thread and the GPU work launched in it; GPU events are themselves.
Touched resolve(const Graph& g, EventIndex e, const TransformSpec& spec) {
  Touched out;
  const Timeline& tl = *g.analysis->timeline;
  const Events& ev = tl.events;
  if (e >= ev.size()) return out;
  if (spec.scope == TransformSpec::Scope::OuterOp) e = outer_op(ev, e);
  if (is_gpu_activity(ev.kind[e])) {
    uint32_t n = g.node_of_event[e];
    if (n == kNone) return out;
    if (spec.gpu) out.gpu.push_back(n);
    if (spec.host && g.launched_by[n] != kNone) out.host.push_back(g.launched_by[n]);
    return out;
  }
  if (is_gpu_side(ev.kind[e])) return out;
  const uint32_t track = ev.track[e];
  const uint32_t lane_index = track < g.lane_of_track.size() ? g.lane_of_track[track] : kNone;
  if (lane_index == kNone || g.lanes[lane_index].gpu) return out;
  const Lane& lane = g.lanes[lane_index];
  const int64_t start = ev.ts_ns[e], end = ev.end_ns(e);
  auto it = std::lower_bound(lane.nodes.begin(), lane.nodes.end(), start,
                             [&g](uint32_t n, int64_t t) { return g.nodes[n].start_ns < t; });
  for (; it != lane.nodes.end(); ++it) {
    const Node& node = g.nodes[*it];
    if (node.start_ns >= end && !(node.start_ns == end && node.dur_ns == 0 && start == end)) break;
    if (spec.host) out.host.push_back(*it);
    if (spec.gpu && node.kind != NodeKind::GpuOp) add_launched(g, *it, out.gpu);
  }
  return out;
}

void switch_off_waits(const Graph& g, uint32_t n, Changes& changes) {
  for (uint32_t e = g.incoming[2 * n + 1]; e < g.incoming[2 * n + 2]; ++e) {
    if (g.edges[e].kind == EdgeKind::Wait) changes.edge_off[e] = 1;
  }
}

void remove(const Graph& g, const Touched& t, Changes& changes) {
  for (uint32_t n : t.host) {
    changes.work[n] = 0;
    switch_off_waits(g, n, changes);
  }
  for (uint32_t n : t.gpu) {
    changes.work[n] = 0;
    // A removed op is never launched: nothing waits for its launch latency.
    for (uint32_t e = g.incoming[2 * n]; e < g.incoming[2 * n + 1]; ++e) {
      if (g.edges[e].kind == EdgeKind::Launch) changes.edge_off[e] = 1;
    }
  }
}

void scale(const Graph& g, const Touched& t, const TransformSpec& spec, Changes& changes) {
  const Timeline& tl = *g.analysis->timeline;
  CopyRates rates;
  for (uint32_t n : t.gpu) {
    const double factor =
        spec.table != ScaleTable::None ? table_factor(tl, spec.table, g.nodes[n].event, &rates) : spec.factor;
    changes.work[n] = static_cast<int64_t>(std::llround(static_cast<double>(changes.work[n]) * factor));
  }
}

void make_async(const Graph& g, const Touched& t, Changes& changes) {
  for (uint32_t n : t.host) switch_off_waits(g, n, changes);
  for (uint32_t op : t.gpu) {
    if (g.launched_by[op] != kNone) switch_off_waits(g, g.launched_by[op], changes);
  }
}

// Per step and stream, the kernels become one: the first carries their summed time, the others and their
// launch calls take none.
void fuse(const Graph& g, const Touched& t, Changes& changes) {
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> first;  // (step, lane) -> first node
  std::vector<uint32_t> ops = t.gpu;
  std::sort(ops.begin(), ops.end(), [&g](uint32_t x, uint32_t y) { return g.nodes[x].start_ns < g.nodes[y].start_ns; });
  for (uint32_t n : ops) {
    const Node& node = g.nodes[n];
    auto [it, inserted] = first.try_emplace({node.step, node.lane}, n);
    if (inserted) continue;
    changes.work[it->second] += changes.work[n];
    changes.work[n] = 0;
    if (g.launched_by[n] != kNone) changes.work[g.launched_by[n]] = 0;
  }
}

void overlap(const Graph& g, const Touched& t, Changes& changes) {
  for (uint32_t n : t.gpu) {
    if (g.nodes[n].category != Category::Communication) continue;
    for (uint32_t k = g.outgoing[2 * n + 1]; k < g.outgoing[2 * n + 2]; ++k) {
      const uint32_t e = g.out_edges[k];
      if (g.edges[e].kind == EdgeKind::Order) changes.edge_off[e] = 1;
    }
  }
}

// A kernel with (almost) no work still takes 1-3 us on the GPU's timeline (block scheduling, ramp-up and
// drain): the shortest kernels of traces with hundreds of kernels take 1.0-2.5 us on V100, A100, H100, B200
// and MI300X. That part of every kernel does not grow with its batch. It is the steady steps' shortest
// kernel, at most this: a trace of a few long kernels has no empty kernel to measure it by.
constexpr int64_t kMaxKernelFixedNs = 3000;

int64_t kernel_fixed_ns(const Graph& g) {
  const Analysis& a = *g.analysis;
  const Events& ev = a.timeline->events;
  int64_t shortest = 0;
  for (const Node& node : g.nodes) {
    if (node.kind != NodeKind::GpuOp || node.event == kNone || ev.kind[node.event] != EventKind::Kernel) continue;
    if (node.work_ns <= 0 || !a.is_steady(node.step) || !g.window.measures(node.step)) continue;
    if (shortest == 0 || node.work_ns < shortest) shortest = node.work_ns;
  }
  return std::min(shortest, kMaxKernelFixedNs);
}

// The part of a GPU op's `work_ns` that a larger batch leaves as it is: a kernel's fixed part; none of a
// copy, which is linear in its bytes.
int64_t fixed_part_ns(const Graph& g, uint32_t n, int64_t work_ns, int64_t kernel_fixed) {
  const EventIndex e = g.nodes[n].event;
  const bool kernel = e != kNone && g.analysis->timeline->events.kind[e] == EventKind::Kernel;
  return kernel ? std::min(work_ns, kernel_fixed) : 0;
}

// A GPU op's time with `factor` times the batch: its fixed part stays, the rest grows linearly.
int64_t batch_grown_ns(const Graph& g, uint32_t n, int64_t work_ns, double factor, int64_t kernel_fixed) {
  const int64_t fixed = fixed_part_ns(g, n, work_ns, kernel_fixed);
  return fixed + static_cast<int64_t>(std::llround(static_cast<double>(work_ns - fixed) * factor));
}

// `fixed_ns`: kernel_fixed_ns(g), which the caller may need too.
BatchFactor batch_factor(const Graph& g, const Touched& t, const TransformSpec& spec, int64_t fixed_ns) {
  BatchFactor out;
  const Analysis& a = *g.analysis;
  size_t steps = 0;
  for (uint32_t k = 0; k < a.steps.size(); ++k) steps += a.is_steady(k) && g.window.measures(k) ? 1 : 0;
  int64_t gpu = 0, fixed = 0;
  for (uint32_t n : t.gpu) {
    if (!a.is_steady(g.nodes[n].step) || !g.window.measures(g.nodes[n].step)) continue;
    gpu += g.nodes[n].work_ns;
    fixed += fixed_part_ns(g, n, g.nodes[n].work_ns, fixed_ns);
  }
  const double per_step = steps > 0 ? 1e6 * static_cast<double>(steps) : 1.0;
  out.gpu_ms = steps > 0 ? static_cast<double>(gpu) / per_step : 0.0;
  out.fixed_gpu_ms = steps > 0 ? static_cast<double>(fixed) / per_step : 0.0;
  out.kernel_fixed_us = static_cast<double>(fixed_ns) / 1e3;
  if (spec.factor > 0) {
    out.factor = spec.factor;
    out.memory_limit = 0;
    return out;
  }
  out.memory_limit = batch_headroom(memory_use(a), spec.memory_target);
  const double step_ms = a.step_period_ns() / 1e6;
  const double growing_ms = out.gpu_ms - out.fixed_gpu_ms;
  while (out.factor < out.memory_limit && out.fixed_gpu_ms + out.factor * growing_ms < step_ms) out.factor *= 2;
  return out;
}

// Every node a fix touches, each once.
Touched touched(const Graph& g, const Fix& fix) {
  Touched all;
  std::vector<uint8_t> seen(g.nodes.size(), 0);
  for (EventIndex e : fix.events) {
    Touched t = resolve(g, e, fix.spec);
    for (uint32_t n : t.host) {
      if (!seen[n]) all.host.push_back(n);
      seen[n] = 1;
    }
    for (uint32_t n : t.gpu) {
      if (!seen[n]) all.gpu.push_back(n);
      seen[n] = 1;
    }
  }
  return all;
}

}  // namespace

std::vector<uint32_t> host_nodes(const Graph& g, EventIndex event, const TransformSpec& spec) {
  return resolve(g, event, spec).host;
}

BatchFactor batch_factor(const Graph& g, const Fix& fix) {
  return batch_factor(g, touched(g, fix), fix.spec, kernel_fixed_ns(g));
}

Changes apply_fixes(const Graph& g, const std::vector<Fix>& fixes) {
  Changes changes;
  changes.work.resize(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) changes.work[n] = g.nodes[n].work_ns;
  changes.edge_off.assign(g.edges.size(), 0);
  changes.floor = Floors(2 * g.nodes.size());
  for (const Fix& fix : fixes) {
    if (fix.spec.primitive == Primitive::Background) {
      background(g, fix, changes);
      continue;
    }
    const Touched all = touched(g, fix);
    switch (fix.spec.primitive) {
      case Primitive::Remove: remove(g, all, changes); break;
      case Primitive::Scale: scale(g, all, fix.spec, changes); break;
      case Primitive::MakeAsync: make_async(g, all, changes); break;
      case Primitive::Fuse: fuse(g, all, changes); break;
      case Primitive::Overlap: overlap(g, all, changes); break;
      case Primitive::Batch: {
        // Host time stays: the launches, Python and waits of a step do not grow with its batch.
        const int64_t fixed_ns = kernel_fixed_ns(g);
        const double factor = batch_factor(g, all, fix.spec, fixed_ns).factor;
        for (uint32_t n : all.gpu) changes.work[n] = batch_grown_ns(g, n, changes.work[n], factor, fixed_ns);
        break;
      }
      case Primitive::Background: break;
    }
  }
  return changes;
}

std::string_view to_string(Primitive primitive) {
  switch (primitive) {
    case Primitive::Remove: return "remove";
    case Primitive::Scale: return "scale";
    case Primitive::MakeAsync: return "make_async";
    case Primitive::Fuse: return "fuse";
    case Primitive::Overlap: return "overlap";
    case Primitive::Background: return "background";
    case Primitive::Batch: return "batch";
  }
  return "remove";
}

std::optional<Primitive> parse_primitive(std::string_view text) {
  for (Primitive p : {Primitive::Remove, Primitive::Scale, Primitive::MakeAsync, Primitive::Fuse, Primitive::Overlap,
                      Primitive::Background, Primitive::Batch}) {
    if (text == to_string(p)) return p;
  }
  return std::nullopt;
}

std::optional<ScaleTable> parse_scale_table(std::string_view text) {
  if (text == "tensor_cores") return ScaleTable::TensorCores;
  if (text == "pinned_copy") return ScaleTable::PinnedCopy;
  return std::nullopt;
}

}  // namespace ptadvise::whatif
