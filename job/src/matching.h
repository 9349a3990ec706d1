// The same collective on every rank of a job, and the ranks' clock offsets (alignment.cpp).
#pragma once

#include <cstdint>
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

}  // namespace ptadvise
