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

// CUTLASS 2 kernel names carry the architecture after the library name: cutlass_80_tensorop_…, also inside
// cutlass::Kernel2<cutlass_75_…>. Returns major*10+minor, or -1.
int cutlass_architecture(std::string_view name) {
  for (size_t at = name.find("cutlass_"); at != std::string_view::npos; at = name.find("cutlass_", at + 1)) {
    std::string_view rest = name.substr(at + 8);
    if (rest.size() >= 3 && rest[0] >= '5' && rest[0] <= '9' && rest[1] >= '0' && rest[1] <= '9' && rest[2] == '_') {
      return (rest[0] - '0') * 10 + (rest[1] - '0');
    }
  }
  return -1;
}

bool is_amd_kernel(std::string_view name) {
  return name.starts_with("Cijk_") || contains(name, "xdlops") || name.starts_with("__amd_rocclr") ||
         contains(name, "_gfx9") || name.starts_with("rccl");
}

}  // namespace

void infer_devices(Timeline& timeline) {
  const Events& events = timeline.events;
  // A trace recorded through ROCm calls the HIP runtime (hipLaunchKernel, hipMemcpyAsync, ...): all its
  // devices are AMD, whatever their kernels are called (Triton and vendor kernels carry no AMD marker).
  bool hip_runtime = false;
  for (EventIndex i = 0; i < events.size() && !hip_runtime; ++i) {
    hip_runtime = (events.kind[i] == EventKind::Runtime || events.kind[i] == EventKind::Driver) &&
                  timeline.name(i).starts_with("hip");
  }
  // What a kernel name tells, worked out once per distinct name: the architecture it was built for
  // (major*10+minor, -1 none) and whether it is an AMD library kernel.
  struct NameFacts {
    int16_t arch = -1;
    bool amd = false;
    bool known = false;
  };
  std::vector<NameFacts> facts(timeline.strings.size());
  auto facts_of = [&](StringId id) -> const NameFacts& {
    NameFacts& f = facts[id];
    if (f.known) return f;
    f.known = true;
    const std::string_view full = timeline.strings.view(id);
    const std::string_view name = bare(full);
    f.amd = is_amd_kernel(name);
    for (const ArchPrefix& arch : kArchPrefixes) {
      if (name.starts_with(arch.prefix)) f.arch = static_cast<int16_t>(std::max<int>(f.arch, arch.major * 10 + arch.minor));
    }
    f.arch = static_cast<int16_t>(std::max(static_cast<int>(f.arch), cutlass_architecture(full)));
    return f;
  };
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
      const NameFacts& f = facts_of(events.name[i]);
      it->amd_kernels = it->amd_kernels || f.amd;
      if (f.arch >= 0 && f.arch > it->major * 10 + it->minor) {
        it->major = f.arch / 10;
        it->minor = f.arch % 10;
      }
    }
  }
  // deviceProperties lists the devices the process saw under its own numbering; with CUDA/HIP_VISIBLE_DEVICES
  // the activity may carry another id (properties of device 0, kernels on device 9). When every listed device
  // is the same model, an unlisted active device is that model too.
  const std::vector<DeviceInfo> listed = timeline.devices;
  const bool one_model = !listed.empty() && std::all_of(listed.begin(), listed.end(), [&](const DeviceInfo& d) {
    const DeviceInfo& first = listed.front();
    return d.name == first.name && d.total_global_mem == first.total_global_mem && d.num_sms == first.num_sms &&
           d.compute_major == first.compute_major && d.compute_minor == first.compute_minor;
  });
  for (const Seen& s : seen) {
    auto it = std::find_if(timeline.devices.begin(), timeline.devices.end(),
                           [&](const DeviceInfo& d) { return d.id == s.id; });
    if (it == timeline.devices.end()) {
      DeviceInfo added = one_model ? listed.front() : DeviceInfo{};
      added.id = s.id;
      added.properties_borrowed = one_model;
      it = timeline.devices.insert(timeline.devices.end(), added);
    }
    DeviceInfo& device = *it;
    const bool amd_name = contains(device.name, "AMD") || contains(device.name, "Radeon") ||
                          contains(device.name, "Instinct");
    const bool nvidia_name = contains(device.name, "NVIDIA") || contains(device.name, "Tesla") ||
                             contains(device.name, "GeForce") || contains(device.name, "Quadro");
    if (amd_name || (!nvidia_name && (hip_runtime || (device.name.empty() && s.amd_kernels)))) {
      // ROCm writes the gfx version (9.0 for gfx90a) where CUDA writes a compute capability.
      device.vendor = "AMD";
      device.compute_major = -1;
      device.compute_minor = -1;
      continue;
    }
    const bool nvidia = device.compute_major >= 0 || s.major >= 0 || nvidia_name;
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
