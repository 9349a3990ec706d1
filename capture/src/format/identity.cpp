// Rank and file name of a process's trace.
#include <charconv>

#include "ptadvise/cupti_trace.h"

namespace ptadvise::capture {

namespace {

std::optional<int> first_integer(const std::function<const char*(const char*)>& lookup,
                                 std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* text = lookup(name);
    if (text == nullptr || *text == '\0') continue;
    std::string_view view(text);
    int value = 0;
    auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (error == std::errc() && end == view.data() + view.size() && value >= 0) return value;
  }
  return std::nullopt;
}

// Keeps file names portable: host names may carry anything a user configured.
std::string file_safe(std::string_view text) {
  std::string safe;
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    safe += ok ? c : '-';
  }
  return safe.empty() ? "host" : safe;
}

}  // namespace

void read_rank_environment(ProcessIdentity& identity, const std::function<const char*(const char*)>& lookup) {
  identity.rank = first_integer(lookup, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"});
  identity.local_rank = first_integer(lookup, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"});
  auto world = first_integer(lookup, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE"});
  identity.world_size = world && *world > 0 ? *world : 1;
  // A single process launched with only LOCAL_RANK (one node) has the same global rank.
  if (!identity.rank && identity.local_rank && identity.world_size == 1) identity.rank = identity.local_rank;
}

std::string trace_file_name(const ProcessIdentity& identity) {
  std::string name = file_safe(identity.host) + "_" + std::to_string(identity.pid);
  if (identity.rank) name += ".rank-" + std::to_string(*identity.rank);
  return name + ".pt.trace.json";
}

}  // namespace ptadvise::capture
