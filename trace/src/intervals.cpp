// The public face of the interval helpers the analyses share (analysis.h); job/ uses them too.
#include "analysis_detail.h"

namespace ptadvise {

void merge_intervals(std::vector<Interval>& intervals) { detail::merge_intervals(intervals); }

int64_t covered_ns(const std::vector<Interval>& merged, int64_t start, int64_t end) {
  return detail::covered_ns(merged, start, end);
}

}  // namespace ptadvise
