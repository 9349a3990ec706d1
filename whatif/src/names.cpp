#include "names.h"

namespace ptadvise::whatif {
uint16_t name_flags(std::string_view name) {
  uint16_t flags = 0;
  if (name.starts_with("ProfilerStep#")) flags |= kStepMarker;
  if (name.starts_with("enumerate(DataLoader)#") && contains(name, "__next__")) {
    flags |= kDataLoader;
    if (contains(name, "MultiProcessing")) flags |= kWorkerLoader;
  }
  const bool intel = name.starts_with("ze") || name.starts_with("ur");  // Level Zero, Unified Runtime
  const bool runtime = name.starts_with("cuda") || name.starts_with("hip") || name.starts_with("cu") || intel;
  if (runtime) {
    if (contains(name, "Query")) flags |= kQueryCall;
    if (contains(name, "Synchronize") || name == "urQueueFinish" || name == "urEventWait") flags |= kBlockingCall;
    // Synchronous copies (cudaMemcpy, cudaMemcpy2D, hipMemcpyWithStream, cuMemcpyDtoH), never the *Async ones.
    // (urEnqueueUSMMemcpy takes a blocking flag its name does not show.)
    if (contains(name, "Memcpy") && !contains(name, "Async") && !intel) flags |= kBlockingCall;
    // cudaFree waits for the whole device before it releases memory (not the stream-ordered cudaFreeAsync).
    if ((name == "cudaFree" || name == "hipFree" || name == "cuMemFree" || name == "cuMemFree_v2")) {
      flags |= kBlockingCall | kDeviceWide;
    }
    if (contains(name, "DeviceSynchronize") || contains(name, "CtxSynchronize")) flags |= kDeviceWide;
    if (contains(name, "GraphLaunch")) flags |= kGraphLaunch;
  }
  std::string_view bare = name;
  if (bare.starts_with("void ")) bare.remove_prefix(5);
  if (bare.starts_with("nccl") || bare.starts_with("rccl") || contains(name, "ncclKernel_") ||
      contains(name, "ncclDevKernel_")) {
    flags |= kCommunication;
  }
  return flags;
}

}  // namespace ptadvise::whatif
