// The dependency graph of the steps: host threads cut into segments in program order (gaps are nodes of
// their own), GPU ops per stream, and the edges the trace shows between them (docs/WHATIF.md).
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph_builder.h"
#include "ptadvise/io.h"

namespace ptadvise::whatif::detail {

namespace {

bool is_host_kind(EventKind kind) {
  switch (kind) {
    case EventKind::CpuOp: case EventKind::UserAnnotation: case EventKind::PythonFunction:
    case EventKind::Runtime: case EventKind::Driver: case EventKind::Collective:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Builder::build() {
  edge_limit_ = items_in_memory_share(kEdgeBytes);
  g_.analysis = &a_;
  g_.window = window_;
  // Sized on the window's events, not the trace's: a sampled window of a long trace holds a few percent
  // of them, and the rest of a reservation is address space a memory limit (RLIMIT_AS) counts.
  size_t window_events = 0;
  for (EventIndex i = 0; i < ev_.size(); ++i) window_events += in_window(i) ? 1 : 0;
  g_.nodes.reserve(window_events + window_events / 2);
  g_.edges.reserve(2 * window_events);
  g_.node_of_event.assign(ev_.size(), kNone);
  g_.lane_of_track.assign(tl_.tracks.size(), kNone);
  host_lanes({});
  // The main thread waits for every helper burst one of its pieces spans: cut it at the bursts' edges
  // (docs/WHATIF.md, "join") and cut the threads again (the helpers' pieces stay as they were).
  read_helpers();
  std::vector<int64_t> cuts;
  for (const Burst& b : bursts_) {
    cuts.push_back(b.start);
    cuts.push_back(b.end);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  if (!cuts.empty()) {
    g_.nodes.clear();
    g_.lanes.clear();
    g_.node_of_event.assign(ev_.size(), kNone);
    g_.lane_of_track.assign(tl_.tracks.size(), kNone);
    g_.main_lane = kNone;
    worker_waits_.clear();
    host_lanes(cuts);
  }
  for (uint32_t t = 0; t < tl_.tracks.size(); ++t) {
    if (tl_.tracks[t].kind == TrackKind::Gpu) gpu_lane(t);
  }
  g_.launched_by.assign(g_.nodes.size(), kNone);
  g_.first_launched.assign(g_.nodes.size(), kNone);
  g_.next_launched.assign(g_.nodes.size(), kNone);
  order_edges();
  launch_edges();
  stream_event_edges();
  wait_edges();
  thread_edges();
  worker_wait_edges();
  index_edges();
}

void Builder::throw_over_budget() const {
  throw BudgetExceeded(tl_.path + ": the what-if graph needs more than " +
                       format_bytes(edge_limit_ * kEdgeBytes) +
                       " for its edges, a quarter of the memory available (its syncs wait on " +
                       std::to_string(g_.lanes.size()) +
                       " threads and streams); set PTADVISE_MEMORY_LIMIT to change the limit, or pass --no-whatif");
}

void Builder::host_lanes(const std::vector<int64_t>& main_cuts) {
  static const std::vector<int64_t> none;
  for (uint32_t t = 0; t < tl_.tracks.size(); ++t) {
    if (tl_.tracks[t].kind == TrackKind::Cpu) host_lane(t, t == a_.main_track ? main_cuts : none);
  }
  if (a_.main_track < g_.lane_of_track.size()) g_.main_lane = g_.lane_of_track[a_.main_track];
}

// Cuts a thread's events into segments, each owned by the innermost event running in it, and at `cuts`
// (sorted times).
void Builder::host_lane(uint32_t track, const std::vector<int64_t>& cuts) {
  Lane lane;
  lane.track = track;
  const uint32_t lane_index = static_cast<uint32_t>(g_.lanes.size());
  struct Open {
    EventIndex event;
    int64_t end;
  };
  std::vector<Open> stack;
  int loader_depth = 0, worker_loader_depth = 0;
  int64_t cursor = std::numeric_limits<int64_t>::min();
  uint32_t last_step = kNone;
  auto emit_piece = [&](int64_t from, int64_t to) {
    Node node;
    node.start_ns = from;
    node.dur_ns = to - from;
    node.work_ns = node.dur_ns;
    node.lane = lane_index;
    node.event = stack.empty() ? kNone : stack.back().event;
    if (node.event != kNone && names_.is(tl_, node.event, kStepMarker)) node.event = kNone;
    node.step = node.event != kNone ? a_.event_step[node.event] : last_step;
    if (node.step != kNone) last_step = node.step;
    if (node.event == kNone) {
      node.kind = NodeKind::HostGap;
    } else if (is_call(ev_.kind[node.event])) {
      node.kind = NodeKind::Call;
    } else {
      node.kind = NodeKind::HostWork;
    }
    node.category = loader_depth > 0 ? Category::DataLoader : Category::Host;
    uint32_t n = add_node(node);
    lane.nodes.push_back(n);
    // Inside a multi-process loader's __next__ and in no op or call: the thread waits for a worker's batch.
    if (worker_loader_depth > 0 && node.kind != NodeKind::Call &&
        (node.event == kNone || ev_.kind[node.event] != EventKind::CpuOp)) {
      worker_waits_.push_back(n);
    }
    if (node.event != kNone && g_.node_of_event[node.event] == kNone) g_.node_of_event[node.event] = n;
  };
  auto emit = [&](int64_t from, int64_t to, bool force) {
    if (to < from || (to == from && !force)) return;
    for (auto it = std::upper_bound(cuts.begin(), cuts.end(), from); it != cuts.end() && *it < to; ++it) {
      emit_piece(from, *it);
      from = *it;
    }
    emit_piece(from, to);
  };
  auto pop = [&]() {
    const Open top = stack.back();
    emit(cursor, top.end, is_call(ev_.kind[top.event]) && g_.node_of_event[top.event] == kNone);
    cursor = std::max(cursor, top.end);
    if (names_.is(tl_, top.event, kDataLoader)) --loader_depth;
    if (names_.is(tl_, top.event, kWorkerLoader)) --worker_loader_depth;
    stack.pop_back();
  };
  for (EventIndex i : tl_.track_events[track]) {
    if (!is_host_kind(ev_.kind[i]) || !in_window(i)) continue;
    const int64_t start = ev_.ts_ns[i];
    while (!stack.empty() && stack.back().end <= start) pop();
    if (cursor == std::numeric_limits<int64_t>::min()) {
      cursor = start;
    } else if (start > cursor) {
      emit(cursor, start, false);
      cursor = start;
    }
    int64_t end = ev_.end_ns(i);
    if (!stack.empty()) end = std::min(end, stack.back().end);  // a child never outlives its parent
    stack.push_back({i, std::max(end, start)});
    if (names_.is(tl_, i, kDataLoader)) ++loader_depth;
    if (names_.is(tl_, i, kWorkerLoader)) ++worker_loader_depth;
  }
  while (!stack.empty()) pop();
  if (lane.nodes.empty()) return;
  g_.nodes[lane.nodes.front()].anchored = true;
  g_.lane_of_track[track] = lane_index;
  g_.lanes.push_back(std::move(lane));
}

void Builder::gpu_lane(uint32_t track) {
  Lane lane;
  lane.track = track;
  lane.gpu = true;
  const uint32_t lane_index = static_cast<uint32_t>(g_.lanes.size());
  for (EventIndex i : tl_.track_events[track]) {
    if (!is_gpu_activity(ev_.kind[i]) || !in_window(i)) continue;
    Node node;
    node.start_ns = ev_.ts_ns[i];
    node.dur_ns = ev_.dur_ns[i];
    node.work_ns = node.dur_ns;
    node.event = i;
    node.lane = lane_index;
    node.step = a_.event_step[i];
    node.kind = NodeKind::GpuOp;
    node.category = ev_.kind[i] != EventKind::Kernel ? Category::Copy
                    : names_.is(tl_, i, kCommunication)   ? Category::Communication
                                                      : Category::Compute;
    uint32_t n = add_node(node);
    lane.nodes.push_back(n);
    g_.node_of_event[i] = n;
  }
  if (lane.nodes.empty()) return;
  g_.lane_of_track[track] = lane_index;
  const Track& t = tl_.tracks[track];
  lane_by_stream_[{t.device, t.stream}] = lane_index;
  g_.lanes.push_back(std::move(lane));
}

// Counting sort by target vertex (linear), then the outgoing index.
void Builder::index_edges() {
  const size_t vertices = 2 * g_.nodes.size();
  g_.incoming.assign(vertices + 1, 0);
  g_.outgoing.assign(vertices + 1, 0);
  for (const Edge& e : g_.edges) {
    ++g_.incoming[e.to + 1];
    ++g_.outgoing[e.from + 1];
  }
  for (size_t v = 0; v < vertices; ++v) {
    g_.incoming[v + 1] += g_.incoming[v];
    g_.outgoing[v + 1] += g_.outgoing[v];
  }
  std::vector<Edge> sorted(g_.edges.size());
  std::vector<uint32_t> fill(g_.incoming.begin(), g_.incoming.end() - 1);
  for (const Edge& e : g_.edges) sorted[fill[e.to]++] = e;
  g_.edges = std::move(sorted);
  g_.out_edges.assign(g_.edges.size(), 0);
  fill.assign(g_.outgoing.begin(), g_.outgoing.end() - 1);
  for (uint32_t e = 0; e < g_.edges.size(); ++e) g_.out_edges[fill[g_.edges[e].from]++] = e;
}

}  // namespace ptadvise::whatif::detail

namespace ptadvise::whatif {

std::string_view to_string(Category category) {
  switch (category) {
    case Category::Compute: return "compute";
    case Category::Communication: return "communication";
    case Category::Copy: return "copies";
    case Category::Host: return "host";
    case Category::Sync: return "sync";
    case Category::DataLoader: return "data loader";
  }
  return "host";
}

StepWindow replay_window(const Analysis& analysis, size_t event_budget) {
  StepWindow window;
  const size_t n = analysis.steps.size();
  if (n == 0) return window;
  window.last = static_cast<uint32_t>(n - 1);
  std::vector<uint32_t> steady;
  for (uint32_t k = 0; k < n; ++k) {
    if (analysis.is_steady(k)) steady.push_back(k);
  }
  if (steady.empty()) return window;
  window.measured_first = steady.front();
  window.measured_last = steady.back();
  size_t events = 0, steady_events = 0;
  for (uint32_t step : analysis.event_step) {
    if (step == kNone) continue;
    ++events;
    if (analysis.is_steady(step)) ++steady_events;
  }
  if (events <= event_budget || steady.size() <= kReplayMinSteps) return window;
  const double per_step = static_cast<double>(steady_events) / static_cast<double>(steady.size());
  const size_t w = std::max(kReplayMinSteps, static_cast<size_t>(static_cast<double>(event_budget) / std::max(1.0, per_step)));
  if (w >= steady.size()) return window;
  // Consecutive steady steps whose mean period is closest to the trace's: a sliding sum, linear in steps.
  const double target = analysis.step_period_ns() * static_cast<double>(w);
  double sum = 0, best = std::numeric_limits<double>::max();
  size_t best_from = 0;
  for (size_t k = 0; k < steady.size(); ++k) {
    sum += static_cast<double>(analysis.steps[steady[k]].period_ns);
    if (k >= w) sum -= static_cast<double>(analysis.steps[steady[k - w]].period_ns);
    if (k + 1 < w) continue;
    const double off = std::fabs(sum - target);
    if (off < best) {
      best = off;
      best_from = k + 1 - w;
    }
  }
  window.sampled = true;
  window.measured_first = steady[best_from];
  window.measured_last = steady[best_from + w - 1];
  window.first = window.measured_first > 0 ? window.measured_first - 1 : 0;
  window.last = std::min<uint32_t>(window.measured_last + 1, static_cast<uint32_t>(n - 1));
  return window;
}

namespace {

// Graph::order: Kahn's order over the vertices (a node's end after its start, every edge's target after its
// source), then the vertices left in a cycle in measured order.
void order_vertices(Graph& g) {
  const size_t vertices = 2 * g.nodes.size();
  std::vector<uint32_t> pending(vertices, 0);
  for (size_t v = 0; v < vertices; ++v) pending[v] = g.incoming[v + 1] - g.incoming[v] + (v % 2 == 1 ? 1 : 0);
  std::vector<uint32_t>& order = g.order;
  order.clear();
  order.reserve(vertices);
  for (uint32_t v = 0; v < vertices; ++v) {
    if (pending[v] == 0) order.push_back(v);
  }
  for (size_t head = 0; head < order.size(); ++head) {
    const uint32_t v = order[head];
    auto release = [&](uint32_t w) {
      if (--pending[w] == 0) order.push_back(w);
    };
    if (v % 2 == 0) release(v + 1);
    for (uint32_t k = g.outgoing[v]; k < g.outgoing[v + 1]; ++k) release(g.edges[g.out_edges[k]].to);
  }
  g.ordered = order.size();
  if (order.size() == vertices) return;
  std::vector<uint8_t> placed(vertices, 0);
  for (uint32_t v : order) placed[v] = 1;
  std::vector<uint32_t> rest;
  for (uint32_t v = 0; v < vertices; ++v) {
    if (!placed[v]) rest.push_back(v);
  }
  auto measured = [&](uint32_t v) {
    const Node& node = g.nodes[v / 2];
    return v % 2 == 0 ? node.start_ns : node.start_ns + node.dur_ns;
  };
  std::stable_sort(rest.begin(), rest.end(), [&](uint32_t x, uint32_t y) { return measured(x) < measured(y); });
  order.insert(order.end(), rest.begin(), rest.end());
}

}  // namespace

Graph build_graph(const Analysis& analysis, const StepWindow& window) {
  Graph graph;
  if (analysis.timeline == nullptr) return graph;
  detail::Builder(analysis, window, graph).build();
  order_vertices(graph);
  return graph;
}

Graph build_graph(const Analysis& analysis) {
  return build_graph(analysis, replay_window(analysis, std::numeric_limits<size_t>::max()));
}

}  // namespace ptadvise::whatif
