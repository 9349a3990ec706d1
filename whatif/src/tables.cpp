// Scale tables: how much faster a GPU op runs after a fix (docs/WHATIF.md, "Scale tables").
#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "names.h"
#include "ptadvise/whatif.h"

namespace ptadvise::whatif {
namespace {

// Achieved pinned host<->device copy bandwidth of a PCIe x16 link, by the GPU generation that pairs
// with it (bytes per ns = GB/s): PCIe 3.0 (Volta, Turing) ~12, PCIe 4.0 (Ampere) ~24, PCIe 5.0 (Hopper,
// Blackwell) ~48: about 75% of the link's 15.8 / 31.5 / 63 GB/s per direction.
double link_bandwidth(const Timeline& timeline, int32_t device) {
  const DeviceInfo* info = timeline.device(device);
  const int major = info != nullptr ? info->compute_major : -1;
  if (major >= 9) return 48.0;
  if (major == 8) return 24.0;
  return 12.0;
}

std::string_view direction(std::string_view name) {
  if (contains(name, "HtoD")) return "HtoD";
  if (contains(name, "DtoH")) return "DtoH";
  return {};
}

// Pinned copies of the same direction in this trace show what the link really gives: their median
// bandwidth, counting only copies of at least 1 MiB (small ones measure the latency, not the link).
double measured_pinned_bandwidth(const Timeline& timeline, std::string_view dir) {
  std::vector<double> rates;
  const Events& ev = timeline.events;
  for (EventIndex i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::Memcpy || ev.dur_ns[i] <= 0) continue;
    std::string_view name = timeline.name(i);
    if (!contains(name, "Pinned") || direction(name) != dir) continue;
    auto bytes = timeline.arg_double(i, "bytes");
    if (!bytes || *bytes < (1 << 20)) continue;
    rates.push_back(*bytes / static_cast<double>(ev.dur_ns[i]));
  }
  if (rates.empty()) return 0;
  std::nth_element(rates.begin(), rates.begin() + static_cast<std::ptrdiff_t>(rates.size() / 2), rates.end());
  return rates[rates.size() / 2];
}

// fp32 kernels that would run on Tensor Cores after the fix (autocast to fp16/bf16, or TF32): the
// speed-up NVIDIA documents for mixed precision on whole kernels ("up to 3x" on Volta and later, the
// Mixed Precision Training guide); the peak-throughput ratio (8x and more) is never reached by real
// convolutions and GEMMs, which also move memory.
double tensor_core_factor(const Timeline& timeline, EventIndex op) {
  std::string_view name = timeline.name(op);
  // Already on Tensor Cores: nothing to gain.
  for (std::string_view marker : {"h884", "s884", "i884", "1688", "16816", "8816", "hmma", "tensorop", "gmma", "tf32",
                                  "bf16", "fp16", "wmma", "mfma"}) {
    if (contains(name, marker)) return 1.0;
  }
  const DeviceInfo* info = timeline.device(timeline.tracks[timeline.events.track[op]].device);
  if (info != nullptr && info->compute_major >= 0 && info->compute_major < 7) return 1.0;  // no Tensor Cores
  return 1.0 / 3.0;
}

}  // namespace

double table_factor(const Timeline& timeline, ScaleTable table, EventIndex gpu_op, CopyRates* rates) {
  if (gpu_op >= timeline.events.size()) return 1.0;
  const Events& ev = timeline.events;
  switch (table) {
    case ScaleTable::None: return 1.0;
    case ScaleTable::TensorCores: return ev.kind[gpu_op] == EventKind::Kernel ? tensor_core_factor(timeline, gpu_op) : 1.0;
    case ScaleTable::PinnedCopy: {
      std::string_view name = timeline.name(gpu_op);
      if (ev.kind[gpu_op] != EventKind::Memcpy || !contains(name, "Pageable") || ev.dur_ns[gpu_op] <= 0) return 1.0;
      auto bytes = timeline.arg_double(gpu_op, "bytes");
      if (!bytes) return 1.0;
      const std::string_view dir = direction(name);
      double bandwidth = 0;
      if (rates == nullptr || dir.empty()) {
        bandwidth = measured_pinned_bandwidth(timeline, dir);
      } else {
        std::optional<double>& cached = dir == "HtoD" ? rates->host_to_device : rates->device_to_host;
        if (!cached) cached = measured_pinned_bandwidth(timeline, dir);
        bandwidth = *cached;
      }
      if (bandwidth <= 0) bandwidth = link_bandwidth(timeline, timeline.tracks[ev.track[gpu_op]].device);
      return std::min(1.0, *bytes / bandwidth / static_cast<double>(ev.dur_ns[gpu_op]));
    }
  }
  return 1.0;
}

}  // namespace ptadvise::whatif

namespace ptadvise::whatif {

MemoryUse memory_use(const Analysis& analysis) {
  MemoryUse use;
  if (analysis.timeline == nullptr) return use;
  const Timeline& tl = *analysis.timeline;
  const Events& ev = tl.events;
  int64_t held = std::numeric_limits<int64_t>::max(), peak = -1;
  int64_t device = -1;
  for (EventIndex i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::MemoryInstant || !analysis.is_steady(analysis.event_step[i])) continue;
    if (tl.arg_int(i, "Device Type").value_or(-1) != 1) continue;  // 1: CUDA (0 is the host)
    auto allocated = tl.arg_int(i, "Total Allocated");
    if (!allocated || *allocated < 0) continue;  // a negative total is no allocation
    const int64_t id = tl.arg_int(i, "Device Id").value_or(0);
    if (device < 0) device = id;
    if (id != device) continue;  // the first device the trace allocates on (one GPU per process)
    held = std::min(held, *allocated);
    peak = std::max(peak, *allocated);
  }
  if (peak < 0) return use;
  const DeviceInfo* info = tl.device(static_cast<int32_t>(device));
  use.held = held;
  use.peak = peak;
  use.device_bytes = info != nullptr ? info->total_global_mem : 0;
  return use;
}

double batch_headroom(const MemoryUse& use, double target) {
  if (!use.known()) return 1.0;
  const double room = target * static_cast<double>(use.device_bytes) - static_cast<double>(use.held);
  const double per_batch = static_cast<double>(use.peak) - static_cast<double>(use.held);
  double factor = 1.0;
  while (factor < 1024 && use.held + 2 * factor * per_batch <= use.held + room) factor *= 2;
  return factor;
}

}  // namespace ptadvise::whatif
