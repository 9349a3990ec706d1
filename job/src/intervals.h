// Internal to job/: sorted disjoint interval sets (trace/'s helpers, and the part of one set outside another).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise::job_detail {

inline void merge(std::vector<Interval>& intervals) { merge_intervals(intervals); }

inline int64_t covered(const std::vector<Interval>& merged, int64_t start, int64_t end) {
  return covered_ns(merged, start, end);
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
