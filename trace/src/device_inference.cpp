// Devices without (complete) deviceProperties: every device with GPU activity gets a DeviceInfo, its vendor,
// and — for NVIDIA devices without a compute capability — the architecture its kernels were built for.
#include <algorithm>
#include <array>
#include <string_view>

#include "links.h"

namespace ptadvise::detail {
namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// Architecture prefixes of NVIDIA library kernels (cuBLAS, cuDNN, CUTLASS): the newest one a device ran is
// the oldest architecture it can be.
struct ArchPrefix {
  std::string_view prefix;
  int major, minor;
};
constexpr std::array<ArchPrefix, 12> kArchPrefixes = {{
    {"sm100_", 10, 0}, {"sm90_", 9, 0}, {"sm89_", 8, 9}, {"sm86_", 8, 6}, {"sm80_", 8, 0}, {"ampere_", 8, 0},
    {"sm75_", 7, 5}, {"turing_", 7, 5}, {"sm70_", 7, 0}, {"volta_", 7, 0}, {"sm60_", 6, 0}, {"maxwell_", 5, 0},
}};

std::string_view bare(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  if (name.starts_with("cutlass::Kernel<cutlass_")) name.remove_prefix(std::string_view("cutlass::Kernel<cutlass_").size());
  if (name.starts_with("cutlass_")) name.remove_prefix(8);
  return name;
}

bool is_amd_kernel(std::string_view name) {
  return name.starts_with("Cijk_") || contains(name, "xdlops") || name.starts_with("__amd_rocclr") ||
         contains(name, "_gfx9") || name.starts_with("rccl");
}

}  // namespace

void infer_devices(Timeline& timeline) {
  const Events& events = timeline.events;
  struct Seen {
    int32_t id;
    int major = -1, minor = -1;
    bool amd_kernels = false;
  };
  std::vector<Seen> seen;
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    const Track& track = timeline.tracks[t];
    if (track.kind != TrackKind::Gpu || timeline.track_events[t].empty()) continue;
    auto it = std::find_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.id == track.device; });
    if (it == seen.end()) it = seen.insert(seen.end(), Seen{track.device});
    for (EventIndex i : timeline.track_events[t]) {
      if (events.kind[i] != EventKind::Kernel) continue;
      std::string_view name = bare(timeline.name(i));
      it->amd_kernels = it->amd_kernels || is_amd_kernel(name);
      for (const ArchPrefix& arch : kArchPrefixes) {
        if (name.starts_with(arch.prefix) &&
            (arch.major > it->major || (arch.major == it->major && arch.minor > it->minor))) {
          it->major = arch.major;
          it->minor = arch.minor;
        }
      }
    }
  }
  for (const Seen& s : seen) {
    auto it = std::find_if(timeline.devices.begin(), timeline.devices.end(),
                           [&](const DeviceInfo& d) { return d.id == s.id; });
    if (it == timeline.devices.end()) {
      DeviceInfo added;
      added.id = s.id;
      it = timeline.devices.insert(timeline.devices.end(), added);
    }
    DeviceInfo& device = *it;
    const bool amd_name = contains(device.name, "AMD") || contains(device.name, "Radeon") ||
                          contains(device.name, "Instinct");
    if (amd_name || (device.name.empty() && s.amd_kernels)) {
      // ROCm writes the gfx version (9.0 for gfx90a) where CUDA writes a compute capability.
      device.vendor = "AMD";
      device.compute_major = -1;
      device.compute_minor = -1;
      continue;
    }
    const bool nvidia = device.compute_major >= 0 || s.major >= 0 || contains(device.name, "NVIDIA") ||
                        contains(device.name, "Tesla") || contains(device.name, "GeForce") ||
                        contains(device.name, "Quadro");
    if (!nvidia) continue;  // nothing tells (an accelerator of another kind, or no kernels to go by)
    device.vendor = "NVIDIA";
    if (device.compute_major < 0 && s.major >= 0) {
      device.compute_major = s.major;
      device.compute_minor = s.minor;
      device.compute_inferred = true;
    }
  }
  std::sort(timeline.devices.begin(), timeline.devices.end(),
            [](const DeviceInfo& a, const DeviceInfo& b) { return a.id < b.id; });
}

}  // namespace ptadvise::detail
