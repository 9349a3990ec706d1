// What a collective's records say of it (collective_metadata.cpp). Internal to job/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ptadvise/job.h"

namespace ptadvise::job_detail {

struct CollectiveMetadata {
  std::optional<CollectiveType> type;
  std::string group;
  int64_t seq = -1;
  int64_t in_bytes = 0, out_bytes = 0;
  int32_t group_size = 0;
};

// A message's bytes from its element count; 0 (unknown) for a negative count or one no real message has
// (past 2^50 bytes, a petabyte), never an overflowed product.
int64_t message_bytes(int64_t elements, int64_t element_bytes);

// Reads the collective's description from one event's args (kernel args in newer traces, record_param_comms
// and nccl:* records on the host) into `meta`, keeping what is already known.
void read_metadata(const Timeline& timeline, EventIndex e, CollectiveMetadata& meta);

}  // namespace ptadvise::job_detail
