// Fixes turned into changes of the replay: per-node work, edges switched off, earliest times.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ptadvise/whatif.h"

namespace ptadvise::whatif {

struct Changes {
  std::vector<int64_t> work;       // per node
  std::vector<uint8_t> edge_off;   // per edge
  std::vector<int64_t> floor;      // per vertex: no earlier than this (min() when free)
};

Changes apply_fixes(const Graph& graph, const std::vector<Fix>& fixes);

// The host nodes an event covers on its thread (in time order), as a transform with `spec` takes them.
std::vector<uint32_t> host_nodes(const Graph& graph, EventIndex event, const TransformSpec& spec);

// The `background` primitive (background.cpp).
void background(const Graph& graph, const Fix& fix, Changes& changes);

}  // namespace ptadvise::whatif
