// Discrete-event replay of the step graph: every vertex (a node's start or end) happens as soon as all
// its dependencies allow, in topological order (linear in nodes and edges); then the steps' periods are
// measured on the replayed times exactly as on the trace, and the critical path is walked back.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "transform.h"

namespace ptadvise::whatif {
namespace {

constexpr uint32_t kOwnStart = kNone - 1;  // an end vertex bound by its own start (+ work)

struct Schedule {
  std::vector<int64_t> time;     // per vertex
  // Per vertex: the edge that set it, kOwnStart, or kNone (its measured start). Only for a walk of the
  // critical path (empty otherwise).
  std::vector<uint32_t> binder;
  size_t unordered = 0;
};

Schedule schedule(const Graph& g, const Changes& changes, bool with_binders) {
  const size_t nodes = g.nodes.size();
  const size_t vertices = 2 * nodes;
  Schedule s;
  s.time.assign(vertices, kUnset);
  if (with_binders) s.binder.assign(vertices, kNone);
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Node& node : g.nodes) origin = std::min(origin, node.start_ns);
  auto settle = [&](uint32_t v) {
    const uint32_t n = v / 2;
    const Node& node = g.nodes[n];
    int64_t t = kUnset;
    uint32_t binder = kNone;
    if (v % 2 == 0) {
      if (node.anchored) t = node.start_ns;
    } else if (s.time[v - 1] != kUnset) {
      t = bounded_sum(s.time[v - 1], changes.work[n]);
      binder = kOwnStart;
    }
    for (uint32_t e = g.incoming[v]; e < g.incoming[v + 1]; ++e) {
      if (changes.edge_off[e]) continue;
      const Edge& edge = g.edges[e];
      if (s.time[edge.from] == kUnset) continue;
      const int64_t candidate = bounded_sum(s.time[edge.from], edge.delay_ns);
      if (t == kUnset || candidate > t) {
        t = candidate;
        binder = e;
      }
    }
    if (const int64_t floor = changes.floor.at(v); floor != Floors::kFree && (t == kUnset || floor > t)) {
      t = floor;
      binder = kNone;
    }
    if (t == kUnset) {
      // Nothing constrains it: its measured time, unless a transform switched off all its dependencies
      // (a removed op), which frees it to the start of the replay.
      const bool freed = v % 2 == 0 && g.incoming[v + 1] > g.incoming[v];
      t = freed ? origin : v % 2 == 0 ? node.start_ns : node.start_ns + node.dur_ns;
    }
    s.time[v] = std::clamp(t, -kReplayLimitNs, kReplayLimitNs);
    if (with_binders) s.binder[v] = binder;
  };
  // In dependency order, so every vertex's sources are settled before it; vertices in a dependency cycle
  // (timestamps that contradict each other) last, in measured order.
  for (uint32_t v : g.order) settle(v);
  s.unordered = g.order.size() - g.ordered;
  return s;
}

// The node of a lane running at a measured instant (the last to start at or before it), else kNone.
uint32_t node_running_at(const Graph& g, uint32_t lane_index, int64_t time) {
  const Lane& lane = g.lanes[lane_index];
  auto it = std::upper_bound(lane.nodes.begin(), lane.nodes.end(), time,
                             [&g](int64_t t, uint32_t n) { return t < g.nodes[n].start_ns; });
  return it == lane.nodes.begin() ? kNone : *(it - 1);
}

// Where a measured instant on a lane lies in the replay: the same offset into the node running then.
int64_t replayed_instant(const Graph& g, const Schedule& s, uint32_t lane_index, int64_t time) {
  const uint32_t n = node_running_at(g, lane_index, time);
  if (n == kNone) {
    const uint32_t first = g.lanes[lane_index].nodes.front();
    return s.time[2 * first] - (g.nodes[first].start_ns - time);
  }
  const int64_t offset = time - g.nodes[n].start_ns;
  return std::min(s.time[2 * n] + offset, std::max(s.time[2 * n + 1], s.time[2 * n]) +
                                              std::max<int64_t>(0, offset - g.nodes[n].dur_ns));
}

struct StepTimes {
  std::vector<int64_t> host_start, host_end, gpu_first, gpu_end;
  std::vector<uint8_t> gpu_span_only;  // Step::gpu_span_only
  std::vector<uint32_t> gpu_first_node;
  std::vector<uint32_t> gpu_end_node;  // the GPU op whose end is gpu_end
};

StepTimes step_times(const Graph& g, const Schedule& s) {
  const Analysis& a = *g.analysis;
  const size_t n = a.steps.size();
  StepTimes st;
  st.host_start.assign(n, kUnset);
  st.host_end.assign(n, kUnset);
  st.gpu_first.assign(n, kUnset);
  st.gpu_end.assign(n, kUnset);
  st.gpu_first_node.assign(n, kNone);
  st.gpu_end_node.assign(n, kNone);
  st.gpu_span_only.assign(n, 0);
  for (size_t k = 0; k < n; ++k) st.gpu_span_only[k] = a.steps[k].gpu_span_only ? 1 : 0;
  std::vector<int64_t> any_first(n, kUnset);
  std::vector<uint32_t> any_first_node(n, kNone);
  for (uint32_t v = 0; v < g.nodes.size(); ++v) {
    const Node& node = g.nodes[v];
    if (node.kind != NodeKind::GpuOp || node.step >= n) continue;
    const int64_t start = s.time[2 * v], end = s.time[2 * v + 1];
    if (g.launched_by[v] != kNone && (st.gpu_first[node.step] == kUnset || start < st.gpu_first[node.step])) {
      st.gpu_first[node.step] = start;
      st.gpu_first_node[node.step] = v;
    }
    if (any_first[node.step] == kUnset || start < any_first[node.step]) {
      any_first[node.step] = start;
      any_first_node[node.step] = v;
    }
    if (st.gpu_end_node[node.step] == kNone || end > st.gpu_end[node.step]) {
      st.gpu_end[node.step] = end;
      st.gpu_end_node[node.step] = v;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (st.gpu_first[k] == kUnset) {
      st.gpu_first[k] = any_first[k];
      st.gpu_first_node[k] = any_first_node[k];
    }
    if (g.main_lane != kNone) {
      st.host_start[k] = replayed_instant(g, s, g.main_lane, a.steps[k].start_ns);
      st.host_end[k] = replayed_instant(g, s, g.main_lane, a.steps[k].period_host_end());
    } else {
      st.host_start[k] = a.steps[k].start_ns;
      st.host_end[k] = a.steps[k].period_host_end();
    }
  }
  return st;
}

// The period of step k in the replay, defined as Analysis defines it on the trace; `from_gpu` tells
// which side set it.
int64_t period(const StepTimes& st, size_t k, bool& from_gpu) {
  const size_t n = st.host_start.size();
  const int64_t host = k + 1 < n ? st.host_start[k + 1] - st.host_start[k] : st.host_end[k] - st.host_start[k];
  int64_t gpu = 0;
  if (st.gpu_first[k] != kUnset) {
    gpu = k + 1 < n && st.gpu_first[k + 1] != kUnset ? st.gpu_first[k + 1] - st.gpu_first[k]
                                                     : st.gpu_end[k] - st.gpu_first[k];
  }
  // A tie goes to the GPU side: the walk back from the next step's first GPU op still crosses to the host
  // when that op waited for its launch, while the host's instant in a tie is often only where it was
  // when the GPU started that op (steps cut at GPU ops, a host blocked in a wait).
  from_gpu = (st.gpu_first[k] != kUnset && gpu >= host) || (st.gpu_span_only[k] && st.gpu_first[k] != kUnset);
  if (st.gpu_span_only[k] && st.gpu_first[k] != kUnset) return std::max<int64_t>(0, gpu);
  return std::max<int64_t>(0, std::max(host, gpu));
}

Category edge_category(const Graph& g, const Edge& edge) {
  switch (edge.kind) {
    case EdgeKind::Wait: return Category::Sync;
    case EdgeKind::Order: case EdgeKind::StreamEvent:
      return edge.cause_untraced ? Category::Host : g.nodes[edge.to / 2].category;
    default: return Category::Host;
  }
}

// `category`: the one edge_category gave the piece (a GPU gap charged to the host had no traced cause).
std::string_view edge_label(EdgeKind kind, Category category) {
  if (kind == EdgeKind::Order && category == Category::Host) return "(GPU gap, no traced launch)";
  switch (kind) {
    case EdgeKind::Launch: return "(launch latency)";
    case EdgeKind::Wait: return "(return from the wait)";
    case EdgeKind::Thread: return "(hand-off between threads)";
    case EdgeKind::GraphLaunch: return "(graph launch latency)";
    case EdgeKind::StreamEvent: case EdgeKind::Order: return "(GPU gap)";
  }
  return "(gap)";
}

// Walks the binding dependencies back from `vertex` (reached at `until`) to time `from`, giving `take` the
// pieces latest first: a node's own time in its category, an edge's delay in the edge's.
template <typename Take>
void walk_back(const Graph& g, const Schedule& s, uint32_t vertex, int64_t until, int64_t from, uint32_t step,
               Take&& take) {
  int64_t t = until;
  auto add = [&](uint32_t node, EdgeKind via, Category category, int64_t start) {
    start = std::max(start, from);
    if (start >= t) return;
    take(CriticalSegment{node, step, start, t, category, via});
    t = start;
  };
  for (size_t guard = 0; t > from && vertex != kNone && guard <= s.time.size(); ++guard) {
    const uint32_t n = vertex / 2;
    add(n, EdgeKind::Order, g.nodes[n].category, s.time[vertex]);
    if (t <= from) break;
    const uint32_t binder = s.binder[vertex];
    if (vertex % 2 == 1 && binder == kOwnStart) {
      vertex = vertex - 1;
    } else if (binder != kNone && binder != kOwnStart) {
      const Edge& edge = g.edges[binder];
      add(kNone, edge.kind, edge_category(g, edge), s.time[edge.from]);
      vertex = edge.from;
    } else {
      add(n, EdgeKind::Order, g.nodes[n].category, from);  // anchored: the time before the replay's window
      break;
    }
  }
}

void critical_path(const Graph& g, const Schedule& s, const StepTimes& st, bool keep_pieces, ReplayResult& result) {
  const Analysis& a = *g.analysis;
  const Timeline& tl = *a.timeline;
  const size_t n = a.steps.size();
  // Time per (what the piece is, category), summed under a number first: the event's interned name, or
  // the edge's label; named once per distinct key at the end (a string key per piece cost more than the
  // rest of the walk).
  constexpr uint64_t kHostGap = uint64_t{1} << 40, kEdgeLabel = uint64_t{2} << 40;
  std::unordered_map<uint64_t, int64_t> by_key;
  std::array<int64_t, kCategoryCount> by_category{};
  for (size_t k = 0; k < n; ++k) {
    if (!a.is_steady(static_cast<uint32_t>(k)) || !g.window.measures(static_cast<uint32_t>(k))) continue;
    bool from_gpu = false;
    const int64_t length = period(st, k, from_gpu);
    uint32_t vertex = kNone;
    int64_t until = 0;
    if (k + 1 < n) {
      if (!from_gpu && g.main_lane != kNone) {
        until = st.host_start[k + 1];
        const uint32_t running = node_running_at(g, g.main_lane, a.steps[k + 1].start_ns);
        if (running != kNone) vertex = 2 * running;  // the node running at the next step's start
      }
      if (from_gpu && st.gpu_first_node[k + 1] != kNone) {
        vertex = 2 * st.gpu_first_node[k + 1];
        until = s.time[vertex];
      }
    } else if (from_gpu && st.gpu_end_node[k] != kNone) {
      // The last step ends where the side that set its period ends: its last GPU op, or the main thread at
      // the end of its host interval. Not the latest node of any thread: the profiler's stop cuts every
      // thread's open events at the same instant, and a background thread must not win that tie.
      vertex = 2 * st.gpu_end_node[k] + 1;
      until = s.time[vertex];
    } else if (g.main_lane != kNone) {
      until = st.host_end[k];
      const uint32_t running = node_running_at(g, g.main_lane, a.steps[k].period_host_end());
      if (running != kNone) vertex = 2 * running;  // the node running at the host interval's end
    } else {
      int64_t latest = kUnset;
      for (uint32_t v = 0; v < g.nodes.size(); ++v) {
        if (g.nodes[v].step == k && s.time[2 * v + 1] > latest) {
          latest = s.time[2 * v + 1];
          vertex = 2 * v + 1;
        }
      }
      until = latest;
    }
    if (vertex == kNone) continue;
    // A step's path can hold most of its nodes (one long step of an inference trace): its pieces are
    // summed as the walk meets them, and stored only when kept.
    auto tally = [&](const CriticalSegment& piece) {
      const int64_t d = piece.end_ns - piece.start_ns;
      by_category[static_cast<size_t>(piece.category)] += d;
      uint64_t what = kEdgeLabel | static_cast<uint64_t>(piece.via);
      if (piece.node < g.nodes.size()) {
        const EventIndex e = g.nodes[piece.node].event;
        what = e != kNone ? uint64_t{tl.events.name[e]} : kHostGap;
      }
      by_key[what << 8 | static_cast<uint64_t>(piece.category)] += d;
    };
    if (!keep_pieces) {
      walk_back(g, s, vertex, until, until - length, static_cast<uint32_t>(k), tally);
      continue;
    }
    std::vector<CriticalSegment>& path = result.critical_path;
    const size_t first = path.size();
    walk_back(g, s, vertex, until, until - length, static_cast<uint32_t>(k), [&](const CriticalSegment& piece) {
      tally(piece);
      path.push_back(piece);
    });
    std::reverse(path.begin() + static_cast<std::ptrdiff_t>(first), path.end());  // in time order
  }
  const double steps = static_cast<double>(std::max<size_t>(1, result.steady_steps));
  for (size_t c = 0; c < kCategoryCount; ++c) result.critical_ms[c] = static_cast<double>(by_category[c]) / 1e6 / steps;
  std::map<std::pair<std::string, Category>, int64_t> by_name;
  for (const auto& [key, total] : by_key) {
    const uint64_t what = key >> 8;
    std::string name = what == kHostGap                  ? std::string("(host gap)")
                       : (what & kEdgeLabel) == kEdgeLabel ? std::string(edge_label(static_cast<EdgeKind>(what & 0xff),
                                                                                  static_cast<Category>(key & 0xff)))
                                                           : std::string(tl.strings.view(static_cast<StringId>(what)));
    by_name[{std::move(name), static_cast<Category>(key & 0xff)}] += total;
  }
  for (const auto& [key, total] : by_name) {
    result.critical_top.push_back({key.first, key.second, static_cast<double>(total) / 1e6 / steps});
  }
  std::sort(result.critical_top.begin(), result.critical_top.end(), [](const CriticalItem& x, const CriticalItem& y) {
    return x.ms_per_step != y.ms_per_step ? x.ms_per_step > y.ms_per_step : x.name < y.name;
  });
}

}  // namespace

ReplayResult replay(const Graph& graph, const std::vector<Fix>& fixes, PathDetail path) {
  ReplayResult result;
  if (graph.analysis == nullptr) return result;
  const Analysis& a = *graph.analysis;
  Schedule s = schedule(graph, apply_fixes(graph, fixes), path != PathDetail::None);
  result.unordered = s.unordered;
  StepTimes st = step_times(graph, s);
  double total = 0, measured = 0;
  size_t counted = 0;
  for (size_t k = 0; k < a.steps.size(); ++k) {
    if (!a.is_steady(static_cast<uint32_t>(k)) || !graph.window.measures(static_cast<uint32_t>(k))) continue;
    bool from_gpu = false;
    total += static_cast<double>(period(st, k, from_gpu));
    measured += static_cast<double>(a.steps[k].period_ns);
    ++counted;
  }
  result.steady_steps = counted;
  result.measured_step_ms = counted > 0 ? measured / static_cast<double>(counted) / 1e6 : 0.0;
  result.replayed_step_ms = counted > 0 ? total / static_cast<double>(counted) / 1e6 : 0.0;
  if (path != PathDetail::None) critical_path(graph, s, st, path == PathDetail::Pieces, result);
  result.vertex_ns = std::move(s.time);
  return result;
}

std::string replay_discrepancy(const Graph& graph, const ReplayResult& result) {
  if (result.measured_step_ms <= 0) return {};
  const double ratio = result.replayed_step_ms / result.measured_step_ms;
  if (std::fabs(ratio - 1.0) <= 0.03) return {};
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "the replay of the unchanged trace gives %.3f ms per step, measured %.3f ms",
                result.replayed_step_ms, result.measured_step_ms);
  std::string reason(buffer);
  if (result.unordered > 0) {
    reason += ": " + std::to_string(result.unordered) + " events contradict the order of their dependencies";
  } else if (graph.main_lane == kNone) {
    reason += ": no host thread carries the steps";
  } else {
    reason += ": the trace's dependencies do not explain all of its timing (a wait or a hand-off the graph does not see)";
  }
  return reason + "; predictions for this trace are less certain";
}

}  // namespace ptadvise::whatif
