// Lookups shared by the analysis tests: events by name, times in µs relative to a known event.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ptadvise/analysis.h"
#include "ptadvise/timeline.h"

namespace ptadvise::testing {

// The fetch annotation of a single-process data loader: where iterations start in traces without markers.
inline constexpr const char* kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// The nth event (in file order) with this name and, optionally, this kind; kNone when absent.
inline EventIndex find_event(const Timeline& timeline, std::string_view name, int nth = 0,
                             std::optional<EventKind> kind = std::nullopt) {
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) != name) continue;
    if (kind && timeline.events.kind[i] != *kind) continue;
    if (nth-- == 0) return i;
  }
  return kNone;
}

// Fixture times are written in µs; the loader makes them relative to an origin. Anchoring on an event
// whose written start is known turns written µs back into timeline ns.
struct Clock {
  int64_t origin_ns = 0;
  Clock(const Timeline& timeline, EventIndex anchor, double anchor_written_us)
      : origin_ns(timeline.events.ts_ns[anchor] - static_cast<int64_t>(std::llround(anchor_written_us * 1000))) {}
  int64_t at(double written_us) const { return origin_ns + static_cast<int64_t>(std::llround(written_us * 1000)); }
};

inline int64_t us(double value) { return static_cast<int64_t>(std::llround(value * 1000)); }

// Step k runs from `start_us` to `end_us` as written in the trace.
inline void check_step_bounds(const Analysis& analysis, const Clock& clock, size_t k, double start_us, double end_us) {
  CAPTURE(k);
  REQUIRE(k < analysis.steps.size());
  CHECK(analysis.steps[k].start_ns == clock.at(start_us));
  CHECK(analysis.steps[k].end_ns == clock.at(end_us));
}

// Every idle ns inside the step windows, computed directly from the busy union: what the ledger must sum to.
inline int64_t idle_inside_windows(const Analysis& analysis) {
  int64_t total = 0;
  for (const auto& busy : analysis.busy) {
    for (const Interval& window : analysis.step_windows) {
      int64_t covered = 0;
      for (const Interval& interval : busy) {
        int64_t start = std::max(interval.start_ns, window.start_ns);
        int64_t end = std::min(interval.end_ns, window.end_ns);
        if (end > start) covered += end - start;
      }
      total += window.end_ns - window.start_ns - covered;
    }
  }
  return total;
}

}  // namespace ptadvise::testing
