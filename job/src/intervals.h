// Internal to job/: sorted disjoint interval sets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise::job_detail {

inline void merge(std::vector<Interval>& intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; });
  size_t out = 0;
  for (const Interval& interval : intervals) {
    if (interval.end_ns <= interval.start_ns) continue;
    if (out > 0 && interval.start_ns <= intervals[out - 1].end_ns) {
      intervals[out - 1].end_ns = std::max(intervals[out - 1].end_ns, interval.end_ns);
    } else {
      intervals[out++] = interval;
    }
  }
  intervals.resize(out);
}

// Length of a merged set inside [start, end).
inline int64_t covered(const std::vector<Interval>& merged, int64_t start, int64_t end) {
  int64_t total = 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), start,
                             [](const Interval& interval, int64_t value) { return interval.end_ns <= value; });
  for (; it != merged.end() && it->start_ns < end; ++it) {
    total += std::min(it->end_ns, end) - std::max(it->start_ns, start);
  }
  return std::max<int64_t>(total, 0);
}

// Length of `a` not covered by `b` (both merged), inside [start, end).
inline int64_t uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b, int64_t start, int64_t end) {
  int64_t total = 0;
  auto it = std::lower_bound(a.begin(), a.end(), start,
                             [](const Interval& interval, int64_t value) { return interval.end_ns <= value; });
  for (; it != a.end() && it->start_ns < end; ++it) {
    int64_t s = std::max(it->start_ns, start), e = std::min(it->end_ns, end);
    if (e > s) total += (e - s) - covered(b, s, e);
  }
  return total;
}

// Union of two merged sets.
inline std::vector<Interval> unite(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> all = a;
  all.insert(all.end(), b.begin(), b.end());
  merge(all);
  return all;
}

}  // namespace ptadvise::job_detail
