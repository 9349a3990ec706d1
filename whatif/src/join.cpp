// join_model(): a rank's replay as a max-plus function of the ends of its collectives, so that a job can
// replay its ranks together from their digests (docs/WHATIF.md, "Jobs"). Same rules as replay.cpp's
// schedule(): an instant is the latest of its anchor, its floor, its node's start plus work (an end) and
// its enabled incoming edges; a collective's end is cut from the graph and becomes a variable.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <utility>

#include "transform.h"

namespace ptadvise::whatif {
namespace {

struct Target {
  uint32_t vertex = 0;
  int64_t offset = 0;     // added to the vertex's time
  JoinTime* time = nullptr;
  int32_t collective = -1;  // the collective whose start this is, else -1
};

}  // namespace

int64_t JoinTime::at(const std::vector<int64_t>& ends) const {
  int64_t t = free_ns;
  for (const JoinTerm& term : terms) {
    if (term.source >= ends.size() || ends[term.source] == kNoTime) continue;
    // Saturates as the replay's times do (a hostile digest's ends and delays may be anywhere in int64).
    t = std::max(t, bounded_sum(ends[term.source], term.delay_ns));
  }
  return t;
}

namespace {

// `bounded`: each collective's paths stop at the step after its own (or at the next step with a
// collective); else they run to the end of the graph.
JoinModel build_model(const Graph& g, const std::vector<uint32_t>& collectives, const Changes& changes,
                      const ReplayResult& own, bool bounded) {
  JoinModel model;
  const Analysis& a = *g.analysis;
  const size_t vertices = 2 * g.nodes.size();
  std::vector<int32_t> collective_of(g.nodes.size(), -1);
  for (size_t c = 0; c < collectives.size(); ++c) {
    if (collectives[c] < g.nodes.size()) collective_of[collectives[c]] = static_cast<int32_t>(c);
  }

  // Targets: each collective's start, each step's host start and first GPU op.
  model.arrival.resize(collectives.size());
  uint32_t first_step = kNone, last_step = 0;
  for (uint32_t k = g.window.first; k <= g.window.last && k < a.steps.size(); ++k) {
    if (!g.window.measures(k) && !(k > 0 && g.window.measures(k - 1))) continue;
    first_step = std::min(first_step, k);
    last_step = std::max(last_step, k);
  }
  if (first_step != kNone) {
    for (uint32_t k = first_step; k <= last_step; ++k) model.steps.push_back({k, {}, {}, a.steps[k].gpu_span_only});
  }
  std::vector<Target> targets;
  for (size_t c = 0; c < collectives.size(); ++c) {
    if (collectives[c] < g.nodes.size()) targets.push_back({2 * collectives[c], 0, &model.arrival[c], static_cast<int32_t>(c)});
  }
  std::vector<uint32_t> gpu_first(a.steps.size(), kNone), any_first(a.steps.size(), kNone);
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.kind != NodeKind::GpuOp || node.step >= a.steps.size()) continue;
    auto earlier = [&](uint32_t current) { return current == kNone || own.start_ns(n) < own.start_ns(current); };
    if (g.launched_by[n] != kNone && earlier(gpu_first[node.step])) gpu_first[node.step] = n;
    if (earlier(any_first[node.step])) any_first[node.step] = n;
  }
  for (JoinStep& step : model.steps) {
    const uint32_t k = step.step;
    const uint32_t first = gpu_first[k] != kNone ? gpu_first[k] : any_first[k];
    if (first != kNone) targets.push_back({2 * first, 0, &step.gpu_first, -1});
    if (g.main_lane == kNone) continue;
    const Lane& lane = g.lanes[g.main_lane];
    const int64_t instant = a.steps[k].start_ns;
    auto it = std::upper_bound(lane.nodes.begin(), lane.nodes.end(), instant,
                               [&g](int64_t t, uint32_t n) { return t < g.nodes[n].start_ns; });
    const uint32_t n = it == lane.nodes.begin() ? lane.nodes.front() : *(it - 1);
    targets.push_back({2 * n, instant - g.nodes[n].start_ns, &step.host_start, -1});
  }
  std::unordered_multimap<uint32_t, size_t> targets_at;  // vertex -> targets
  for (size_t t = 0; t < targets.size(); ++t) targets_at.emplace(targets[t].vertex, t);

  const std::vector<uint32_t>& order = g.order;
  std::vector<uint32_t> position(vertices, 0);
  for (uint32_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  auto cut = [&](uint32_t v) { return v % 2 == 1 && collective_of[v / 2] >= 0; };

  // Free times: the replay with every collective's end unknown. An instant that only those ends bind
  // stays unknown; one that nothing binds keeps schedule()'s default (its measured time, or the replay's
  // origin when a transform switched off all it depended on).
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Node& node : g.nodes) origin = std::min(origin, node.start_ns);
  std::vector<int64_t> free(vertices, kUnset);
  for (uint32_t v : order) {
    const uint32_t n = v / 2;
    const Node& node = g.nodes[n];
    if (cut(v)) continue;
    int64_t t = kUnset;
    bool bound = false;  // something other than a constant constrains it
    if (v % 2 == 0) {
      if (node.anchored) t = node.start_ns;
    } else {
      bound = true;
      if (free[v - 1] != kUnset) t = bounded_sum(free[v - 1], changes.work[n]);
    }
    for (uint32_t e = g.incoming[v]; e < g.incoming[v + 1]; ++e) {
      if (changes.edge_off[e]) continue;
      bound = true;
      const Edge& edge = g.edges[e];
      if (free[edge.from] == kUnset) continue;
      const int64_t candidate = bounded_sum(free[edge.from], edge.delay_ns);
      t = t == kUnset ? candidate : std::max(t, candidate);
    }
    if (const int64_t floor = changes.floor.at(v); floor != Floors::kFree) t = t == kUnset ? floor : std::max(t, floor);
    if (t == kUnset && !bound) {
      const bool freed = v % 2 == 0 && g.incoming[v + 1] > g.incoming[v];
      t = freed ? origin : v % 2 == 0 ? node.start_ns : node.start_ns + node.dur_ns;
    }
    free[v] = t == kUnset ? t : std::clamp(t, -kReplayLimitNs, kReplayLimitNs);  // as the replay's times
  }
  for (Target& target : targets) {
    target.time->free_ns = free[target.vertex] == kUnset ? kNoTime : bounded_sum(free[target.vertex], target.offset);
  }

  // Per collective, the longest paths from its end to the targets, through no other collective's end and
  // no further than the next step that holds a collective (or the step after its own).
  std::vector<uint8_t> step_has_collective(a.steps.size() + 1, 0);
  for (uint32_t n : collectives) {
    if (n < g.nodes.size() && g.nodes[n].step < a.steps.size()) step_has_collective[g.nodes[n].step] = 1;
  }
  // The free times are read no further: their buffer holds the distances (8 bytes a vertex less at the
  // peak of `check` on a rank whose steps hold all its events: 3.5 MB of HTA's 87 MB MTIA trace).
  std::vector<int64_t> distance = std::move(free);
  std::fill(distance.begin(), distance.end(), kUnset);
  std::vector<uint32_t> touched;
  // Per target collective: (source, delay) pairs before pruning; from_to[(j, k)] = delay j -> start of k.
  std::unordered_map<uint64_t, int64_t> from_to;
  for (size_t j = 0; j < collectives.size(); ++j) {
    const uint32_t source_node = collectives[j];
    if (source_node >= g.nodes.size()) continue;
    const uint32_t own_step = g.nodes[source_node].step;
    uint32_t horizon = kNone;
    if (bounded && own_step < a.steps.size()) {
      horizon = own_step + 1;
      while (horizon < a.steps.size() && !step_has_collective[horizon] && horizon <= g.window.last) ++horizon;
    }
    using Entry = std::pair<uint32_t, uint32_t>;  // (topological position, vertex)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> frontier;
    const uint32_t source = 2 * source_node + 1;
    distance[source] = 0;
    touched.push_back(source);
    frontier.push({position[source], source});
    while (!frontier.empty()) {
      const uint32_t v = frontier.top().second;
      frontier.pop();
      const int64_t d = distance[v];
      auto reach = [&](uint32_t w, int64_t candidate) {
        const uint32_t step = g.nodes[w / 2].step;
        if (horizon != kNone && step != kNone && step < a.steps.size() && step > horizon) return;
        if (cut(w) || position[w] <= position[v]) return;  // a collective's end, or against the order (a cycle)
        if (distance[w] == kUnset) {
          touched.push_back(w);
          frontier.push({position[w], w});
        } else if (candidate <= distance[w]) {
          return;
        }
        distance[w] = std::max(distance[w], candidate);
      };
      if (v != source) {
        auto [first, last] = targets_at.equal_range(v);
        for (auto it = first; it != last; ++it) {
          Target& target = targets[it->second];
          target.time->terms.push_back({static_cast<uint32_t>(j), bounded_sum(d, target.offset)});
          if (target.collective >= 0) {
            from_to[static_cast<uint64_t>(j) << 32 | static_cast<uint32_t>(target.collective)] = d;
          }
        }
        if (v % 2 == 0 && collective_of[v / 2] >= 0) continue;  // its end comes from the job
      }
      // Paths saturate as the replay's times do (a chain of huge delays would pass int64's limit).
      if (v % 2 == 0) reach(v + 1, bounded_sum(d, changes.work[v / 2]));
      for (uint32_t k = g.outgoing[v]; k < g.outgoing[v + 1]; ++k) {
        const uint32_t e = g.out_edges[k];
        if (changes.edge_off[e]) continue;
        reach(g.edges[e].to, bounded_sum(d, g.edges[e].delay_ns));
      }
    }
    for (uint32_t v : touched) distance[v] = kUnset;
    touched.clear();
  }

  // A term j is dominated at a target when a later collective j2 it reaches also reaches the target at
  // least as late: j2's end is at least its start on this rank, which is at least end[j] + delay(j, j2).
  auto delay = [&](uint32_t j, uint32_t k) -> int64_t {
    auto it = from_to.find(static_cast<uint64_t>(j) << 32 | k);
    return it == from_to.end() ? kUnset : it->second;
  };
  for (Target& target : targets) {
    std::vector<JoinTerm>& terms = target.time->terms;
    if (terms.size() < 2) continue;
    std::vector<JoinTerm> kept;
    for (const JoinTerm& term : terms) {
      bool dominated = false;
      for (const JoinTerm& other : terms) {
        if (other.source == term.source) continue;
        const int64_t via = delay(term.source, other.source);
        if (via != kUnset && term.delay_ns <= via + other.delay_ns) {
          dominated = true;
          break;
        }
      }
      if (!dominated) kept.push_back(term);
    }
    terms = std::move(kept);
  }
  // Self-check: at the collective ends of the scenario's own replay, the model must give back that
  // replay's instants (it is the same max-plus system, cut at those ends).
  std::vector<int64_t> ends(collectives.size(), kNoTime);
  for (size_t c = 0; c < collectives.size(); ++c) {
    if (collectives[c] < g.nodes.size()) ends[c] = own.end_ns(collectives[c]);
  }
  model.exact = true;
  for (const Target& target : targets) {
    const int64_t replayed = bounded_sum(own.vertex_ns[target.vertex], target.offset);
    if (target.time->at(ends) != replayed) model.exact = false;
  }
  return model;
}

// Paths to the end of the graph for every collective: affordable for this many collective x vertices.
constexpr size_t kUnboundedBudget = size_t{1} << 26;

}  // namespace

JoinModel join_model(const Graph& g, const std::vector<uint32_t>& collectives, const std::vector<Fix>& fixes,
                     const ReplayResult* replayed) {
  if (g.analysis == nullptr || g.nodes.empty()) return {};
  const Changes changes = apply_fixes(g, fixes);
  // The scenario's own replay picks each step's first GPU op, as replay() measures periods, and checks
  // the model.
  ReplayResult replayed_here;
  if (replayed == nullptr || replayed->vertex_ns.size() != 2 * g.nodes.size()) {
    replayed_here = replay(g, fixes, PathDetail::None);
    replayed = &replayed_here;
  }
  const ReplayResult& own = *replayed;
  JoinModel model = build_model(g, collectives, changes, own, true);
  // A path that passes the next step without meeting a collective's end (a thread that does not wait for
  // the collective in between): follow every path to the end when that is affordable.
  if (!model.exact && collectives.size() * 2 * g.nodes.size() <= kUnboundedBudget) {
    model = build_model(g, collectives, changes, own, false);
  }
  return model;
}

}  // namespace ptadvise::whatif
