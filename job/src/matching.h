// The same collective on every rank of a job, and the ranks' clock offsets (alignment.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "ptadvise/job.h"

namespace ptadvise {

struct CollectiveMatch {
  bool by_sequence = false;  // matched by sequence numbers (else by step, group and order)
  size_t total = 0;          // collectives of all ranks
  // Per collective present on every rank: its index into each rank's collectives, in key order.
  std::vector<std::vector<int64_t>> complete;
  // Per rank, ns: subtracted from its timestamps to align it with the first rank (median difference of
  // the ends of matched collectives: every rank leaves a collective at nearly the same moment).
  std::vector<int64_t> offset;
};

CollectiveMatch match_collectives(const std::vector<const RankDigest*>& ranks);

// The job's steps replayed with its ranks joined at their collectives (job_whatif.cpp).
JobPrediction predict_job(const std::vector<const RankDigest*>& ranks, const CollectiveMatch& match);

// The job's step, joined, when the ranks `pace` (indices into `ranks`) keep pace with the others: each of
// them arrives at every matched collective no later than the median measured (clock-aligned) arrival of
// the ranks not in `pace`. measured - (joined unchanged - joined with them keeping pace); none when the
// job has no joined replay or every rank is in `pace` (job_whatif.cpp).
std::optional<double> keep_pace_step_ms(const std::vector<const RankDigest*>& ranks, const JobAnalysis& job,
                                        const std::vector<size_t>& pace);

// Sums and differences of a digest's times saturate: a damaged digest may hold any int64.
inline int64_t saturating_plus(int64_t a, int64_t b) {
  int64_t out = 0;
  if (!__builtin_add_overflow(a, b, &out)) return out;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min() + 1;
}

inline int64_t saturating_minus(int64_t a, int64_t b) {
  int64_t out = 0;
  if (!__builtin_sub_overflow(a, b, &out)) return out;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min() + 1;
}

template <typename T>
T median_of(std::vector<T> values) {
  if (values.empty()) return T{};
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  T upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  T lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return std::midpoint(lower, upper);  // no overflow, rounds towards lower as lower + (upper - lower) / 2
}

}  // namespace ptadvise
