// What event names mean to the graph; computed once per distinct name.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ptadvise/timeline.h"

namespace ptadvise::whatif {

enum NameFlag : uint16_t {
  kStepMarker = 1u << 0,     // ProfilerStep#N
  kDataLoader = 1u << 1,     // enumerate(DataLoader)#...__next__
  kBlockingCall = 1u << 2,   // a runtime/driver call that blocks the host until GPU work ends
  kDeviceWide = 1u << 3,     // ... waiting for every stream (device/context synchronize, cudaFree)
  kQueryCall = 1u << 4,      // cudaEventQuery / cudaStreamQuery: never blocks
  kGraphLaunch = 1u << 5,    // cudaGraphLaunch / hipGraphLaunch
  kCommunication = 1u << 6,  // NCCL/RCCL kernels
  kWorkerLoader = 1u << 7,   // enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__: workers load
  kComputed = 1u << 15,
};

uint16_t name_flags(std::string_view name);

inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

class NameFlags {
 public:
  explicit NameFlags(const StringPool& strings) : strings_(strings), flags_(strings.size(), 0) {}
  bool is(const Timeline& timeline, EventIndex i, NameFlag flag) { return (get(timeline.events.name[i]) & flag) != 0; }
  uint16_t get(StringId id) {
    if (id >= flags_.size()) return 0;
    if ((flags_[id] & kComputed) == 0) flags_[id] = static_cast<uint16_t>(name_flags(strings_.view(id)) | kComputed);
    return flags_[id];
  }

 private:
  const StringPool& strings_;
  std::vector<uint16_t> flags_;
};

}  // namespace ptadvise::whatif
