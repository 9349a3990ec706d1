// The edges between threads: hand-offs to helper threads and the main thread's waits for the helper bursts
// it spans (docs/WHATIF.md, "The graph").
#include <algorithm>

#include "graph_builder.h"

namespace ptadvise::whatif::detail {

// The main-thread node running at `time`, or kNone.
uint32_t Builder::main_node_at(int64_t time) const {
  const Lane& main = g_.lanes[g_.main_lane];
  auto it = std::upper_bound(main.nodes.begin(), main.nodes.end(), time,
                             [this](int64_t t, uint32_t n) { return t < g_.nodes[n].start_ns; });
  if (it == main.nodes.begin()) return kNone;
  const Node& node = g_.nodes[*(it - 1)];
  if (time > node.start_ns + node.dur_ns && it == main.nodes.end()) return kNone;
  return *(it - 1);
}

// Walks a helper thread (by positions in its lane): `start(k, m)` for its first node (it begins where
// main-thread node m then was), `hand_off(k, m)` for a gap of its during which the main thread began
// something new (m, running at the gap's end), and `burst(first, last)` for each run of its nodes between
// two hand-offs (the helper's own gaps included: a gap the main thread spent entirely inside one node
// keeps its length).
template <class OnStart, class OnHandOff, class OnBurst>
void Builder::walk_helper(const Lane& lane, OnStart start, OnHandOff hand_off, OnBurst burst) const {
  size_t burst_first = kNone, burst_last = kNone;
  for (size_t k = 0; k < lane.nodes.size(); ++k) {
    const Node& node = g_.nodes[lane.nodes[k]];
    const bool gap = node.kind == NodeKind::HostGap && k != 0;
    if (!gap && k != 0) {
      if (burst_first == kNone) burst_first = k;
      burst_last = k;
      continue;
    }
    const uint32_t m = main_node_at(k == 0 ? node.start_ns : node.start_ns + node.dur_ns);
    if (m == kNone) continue;
    if (k == 0) {
      start(k, m);
      burst_first = burst_last = k;
      continue;
    }
    if (g_.nodes[m].start_ns <= node.start_ns) continue;  // the helper's own gap
    if (burst_first != kNone) burst(burst_first, burst_last);
    burst_first = burst_last = kNone;
    hand_off(k, m);
  }
  if (burst_first != kNone) burst(burst_first, burst_last);
}

// The main-thread node that spans a whole helper burst and may wait for it (not a call or a wait), or kNone.
uint32_t Builder::spanning_waiter(uint32_t first, uint32_t last) const {
  const int64_t b0 = g_.nodes[first].start_ns;
  const int64_t b1 = g_.nodes[last].start_ns + g_.nodes[last].dur_ns;
  const uint32_t m = main_node_at(b0);
  if (m == kNone) return kNone;
  const Node& waiter = g_.nodes[m];
  if (waiter.kind == NodeKind::Call || waiter.kind == NodeKind::HostWait) return kNone;
  if (waiter.start_ns > b0 || waiter.start_ns + waiter.dur_ns < b1) return kNone;
  return m;
}

// A main-thread gap (no traced event on the thread) in which the main thread sat idle for most of a helper
// burst and that ends once the burst's last node is under way: the main thread blocked until the burst's
// work was done (a collective run by the process group's own thread and waited for with work.wait(), which
// the profiler does not record) and resumed just before that node's record closed or after it. Returns the
// gap's end. Only gaps: a traced op overlapping the burst is work of the main thread's own.
std::optional<int64_t> Builder::idle_waiter(uint32_t first, uint32_t last) const {
  const int64_t b0 = g_.nodes[first].start_ns;
  const int64_t b1 = g_.nodes[last].start_ns + g_.nodes[last].dur_ns;
  const int64_t last_start = g_.nodes[last].start_ns;
  const Lane& main = g_.lanes[g_.main_lane];
  auto it = std::upper_bound(main.nodes.begin(), main.nodes.end(), b1,
                             [this](int64_t t, uint32_t n) { return t < g_.nodes[n].start_ns; });
  // Among the main thread's nodes ending after the last node began (it may have resumed before the
  // burst's record closed, and run a little work since), the gap idle for most of the burst: at most one.
  while (it != main.nodes.begin()) {
    const Node& node = g_.nodes[*--it];
    const int64_t end = node.start_ns + node.dur_ns;
    if (end <= last_start) break;
    if (node.kind != NodeKind::HostGap) continue;
    const int64_t idle = std::min(end, b1) - std::max(node.start_ns, b0);
    if (2 * idle >= b1 - b0 && idle > 0) return end;
  }
  return std::nullopt;
}

// How the helper threads follow the main thread, read once on the uncut main thread (by lane and
// position, which cutting the main thread does not change): where each starts and is handed work, and
// the bursts a main-thread piece spans whole.
void Builder::read_helpers() {
  if (g_.main_lane == kNone) return;
  for (uint32_t l = 0; l < g_.lanes.size(); ++l) {
    if (l == g_.main_lane) continue;
    const Lane& lane = g_.lanes[l];
    walk_helper(
        lane, [&](size_t k, uint32_t) { hand_offs_.push_back({l, k, g_.nodes[lane.nodes[k]].start_ns, true}); },
        [&](size_t k, uint32_t) {
          const Node& gap = g_.nodes[lane.nodes[k]];
          hand_offs_.push_back({l, k, gap.start_ns + gap.dur_ns, false});
        },
        [&](size_t first, size_t last) {
          const uint32_t f = lane.nodes[first], t = lane.nodes[last];
          const int64_t end = g_.nodes[t].start_ns + g_.nodes[t].dur_ns;
          if (spanning_waiter(f, t) != kNone) {
            bursts_.push_back({l, last, g_.nodes[f].start_ns, end});
          } else if (auto gap_end = idle_waiter(f, t)) {
            idle_waits_.push_back({l, last, end, *gap_end});
          }
        });
  }
}

// Helper threads (autograd's device thread, pin-memory, loader threads) start their bursts of work
// when the main thread hands it to them: a hand-off gap ends where the main thread then was. When a
// main-thread piece spans a whole burst (the main thread blocked in loss.backward() while the autograd
// thread ran it; a thread that only holds the step markers while another does the work), the piece
// waits for the burst. The main thread was cut at every such burst's edges, so the burst has a piece of
// its own that ends with it (no work of its own), and the instants after it (the next piece, the step's
// end) follow the burst. When bursts of several helpers overlap, a piece that ends where another helper's
// burst starts keeps its measured length: the main thread handed that burst off then.
void Builder::thread_edges() {
  if (g_.main_lane == kNone) return;
  for (const HandOff& h : hand_offs_) {
    const uint32_t n = g_.lanes[h.lane].nodes[h.position];
    const uint32_t m = main_node_at(h.at);
    if (m == kNone) continue;
    Node& node = g_.nodes[n];
    if (h.first) {
      node.anchored = false;
      add_edge(2 * m, 2 * n, h.at - g_.nodes[m].start_ns, EdgeKind::Thread);
    } else {
      node.work_ns = 0;
      add_edge(2 * m, 2 * n + 1, h.at - g_.nodes[m].start_ns, EdgeKind::Thread);
    }
  }
  const Lane& main = g_.lanes[g_.main_lane];
  for (const Burst& b : bursts_) {
    const uint32_t last = g_.lanes[b.lane].nodes[b.last];
    auto it = std::lower_bound(main.nodes.begin(), main.nodes.end(), b.start,
                               [this](uint32_t n, int64_t t) { return g_.nodes[n].start_ns < t; });
    for (; it != main.nodes.end() && g_.nodes[*it].start_ns < b.end; ++it) {
      Node& waiter = g_.nodes[*it];
      if (waiter.start_ns + waiter.dur_ns != b.end) continue;  // ends where another helper's burst starts
      waiter.work_ns = 0;
      add_edge(2 * last + 1, 2 * *it + 1, 0, EdgeKind::Thread);
    }
  }
  // A gap that waited for a burst ends when the burst does, at its measured distance (which may be
  // negative: resumed before the record closed).
  for (const IdleWait& w : idle_waits_) {
    const uint32_t last = g_.lanes[w.lane].nodes[w.last];
    const uint32_t m = main_node_at(w.gap_end - 1);
    if (m == kNone) continue;
    Node& gap = g_.nodes[m];
    if (gap.kind != NodeKind::HostGap || gap.start_ns + gap.dur_ns != w.gap_end) continue;
    gap.work_ns = 0;
    add_edge(2 * last + 1, 2 * m + 1, w.gap_end - w.burst_end, EdgeKind::Thread);
  }
}

}  // namespace ptadvise::whatif::detail
