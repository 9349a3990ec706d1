// Communication names: which kernels and host records are collectives, and of which type.
// communication_kernel() is the one place that knows kernel names; it can be replaced by the kernel
// classification table of trace/ once that table has a communication family.
#include <algorithm>
#include <cctype>
#include <string>

#include "ptadvise/job.h"

namespace ptadvise {

namespace {

std::string squashed_lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '_' || c == ' ' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

std::string_view to_string(CollectiveType type) {
  switch (type) {
    case CollectiveType::AllReduce:
      return "all_reduce";
    case CollectiveType::AllGather:
      return "all_gather";
    case CollectiveType::ReduceScatter:
      return "reduce_scatter";
    case CollectiveType::AllToAll:
      return "all_to_all";
    case CollectiveType::Broadcast:
      return "broadcast";
    case CollectiveType::Reduce:
      return "reduce";
    case CollectiveType::SendRecv:
      return "send_recv";
    case CollectiveType::Barrier:
      return "barrier";
    case CollectiveType::Other:
      return "other";
  }
  return "other";
}

CollectiveType collective_type_from_text(std::string_view text) {
  const std::string s = squashed_lower(text);
  if (contains(s, "allreduce")) return CollectiveType::AllReduce;
  if (contains(s, "reducescatter")) return CollectiveType::ReduceScatter;
  if (contains(s, "allgather")) return CollectiveType::AllGather;
  if (contains(s, "alltoall")) return CollectiveType::AllToAll;
  if (contains(s, "broadcast")) return CollectiveType::Broadcast;
  if (contains(s, "barrier")) return CollectiveType::Barrier;
  if (contains(s, "sendrecv") || s.starts_with("send") || s.starts_with("recv") || contains(s, "sendrecv")) {
    return CollectiveType::SendRecv;
  }
  if (contains(s, "reduce")) return CollectiveType::Reduce;
  return CollectiveType::Other;
}

std::optional<CollectiveType> communication_kernel(std::string_view name) {
  std::string_view bare = name;
  if (bare.starts_with("void ")) bare.remove_prefix(5);
  // NCCL/RCCL: ncclKernel_AllReduce_RING_LL_Sum_float (< 2.19), ncclDevKernel_AllReduce_Sum_f32_RING_LL,
  // ncclDevKernel_Generic (the collective is only on the host record), ncclAllReduceRingLLKernel_sum_f32
  // (NCCL 2.3 era), rccl-prefixed kernels on ROCm.
  for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_"}) {
    size_t at = bare.find(prefix);
    if (at == std::string_view::npos) continue;
    std::string_view rest = bare.substr(at + prefix.size());
    if (rest.starts_with("Generic")) return CollectiveType::Other;
    return collective_type_from_text(rest.substr(0, rest.find('_')));
  }
  if (bare.starts_with("nccl") || bare.starts_with("rccl")) {
    std::string_view rest = bare.substr(4);
    return collective_type_from_text(rest.substr(0, rest.find_first_of("(<")));
  }
  // DeepEP (expert-parallel dispatch/combine over NVLink and NVSHMEM) and NVSHMEM's own kernels.
  if (bare.starts_with("deep_ep::")) return CollectiveType::AllToAll;
  if (bare.starts_with("nvshmem") || bare.starts_with("nvshmemi")) return CollectiveType::Other;
  return std::nullopt;
}

std::optional<CollectiveType> communication_host_op(std::string_view name) {
  // Backend records: gloo:all_reduce, nccl:all_reduce, nccl:_all_gather_base, mpi:..., ucc:...
  size_t colon = name.find(':');
  if (colon != std::string_view::npos && colon + 1 < name.size() && name[colon + 1] != ':') {
    std::string_view backend = name.substr(0, colon);
    if (backend == "gloo" || backend == "nccl" || backend == "mpi" || backend == "ucc" || backend == "xccl" ||
        backend == "hccl" || backend == "rccl") {
      return collective_type_from_text(name.substr(colon + 1));
    }
    return std::nullopt;
  }
  if (name.starts_with("c10d::")) {
    std::string_view op = name.substr(6);
    if (op.starts_with("wait") || op.starts_with("monitored_barrier") || op.starts_with("_wait")) return std::nullopt;
    CollectiveType type = collective_type_from_text(op);
    if (type == CollectiveType::Other && !contains(op, "gather") && !contains(op, "scatter")) return std::nullopt;
    return type;
  }
  if (name == "record_param_comms") return CollectiveType::Other;
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveType type, int ranks) {
  if (ranks < 2) return 1.0;
  const double n = ranks;
  switch (type) {
    case CollectiveType::AllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveType::AllGather:
    case CollectiveType::ReduceScatter:
    case CollectiveType::AllToAll:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

}  // namespace ptadvise
