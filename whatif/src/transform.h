// Fixes turned into changes of the replay: per-node work, edges switched off, earliest times.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "ptadvise/whatif.h"

namespace ptadvise::whatif {

// Replayed times stay within ±2^61 ns, as the loader's do: a chain of scaled work and delays (a batch
// grown 1,024x on a trace of long ops) then saturates instead of overflowing, and the differences and
// per-step sums taken of them stay below 2^63. Every schedule (replay.cpp, join.cpp) clamps to it.
inline constexpr int64_t kReplayLimitNs = int64_t{1} << 61;

// A replayed time not computed yet (the schedules of replay.cpp and join.cpp).
inline constexpr int64_t kUnset = kNoTime;

// a + b within ±kReplayLimitNs, whatever the operands (a time plus a delay, a path plus a node's work).
inline int64_t bounded_sum(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return a < 0 ? -kReplayLimitNs : kReplayLimitNs;
  return std::clamp(sum, -kReplayLimitNs, kReplayLimitNs);
}

// Earliest times of a few vertices (the background primitive sets one per moved batch): a bit per vertex
// says which have one, so a replay reads the map for those only and holds no full-size array for them.
class Floors {
 public:
  static constexpr int64_t kFree = std::numeric_limits<int64_t>::min();
  explicit Floors(size_t vertices = 0) : marked_((vertices + 63) / 64, 0) {}
  // The vertex's earliest time, kFree when it has none.
  int64_t at(uint32_t vertex) const {
    if ((marked_[vertex / 64] >> (vertex % 64) & 1) == 0) return kFree;
    return times_.at(vertex);
  }
  // No earlier than `time` from now on.
  void raise(uint32_t vertex, int64_t time) {
    marked_[vertex / 64] |= uint64_t{1} << (vertex % 64);
    auto [it, inserted] = times_.try_emplace(vertex, time);
    if (!inserted && time > it->second) it->second = time;
  }

 private:
  std::vector<uint64_t> marked_;
  std::unordered_map<uint32_t, int64_t> times_;
};

struct Changes {
  std::vector<int64_t> work;       // per node
  std::vector<uint8_t> edge_off;   // per edge
  Floors floor;                    // per vertex: no earlier than this
};

Changes apply_fixes(const Graph& graph, const std::vector<Fix>& fixes);

// The host nodes an event covers on its thread (in time order), as a transform with `spec` takes them.
std::vector<uint32_t> host_nodes(const Graph& graph, EventIndex event, const TransformSpec& spec);

// The `background` primitive (background.cpp).
void background(const Graph& graph, const Fix& fix, Changes& changes);

}  // namespace ptadvise::whatif
