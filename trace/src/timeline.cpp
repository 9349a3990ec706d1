// Timeline accessors: event kind names and device lookup (args: arg_store.cpp).
#include "ptadvise/timeline.h"

namespace ptadvise {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::CpuOp:
      return "cpu_op";
    case EventKind::UserAnnotation:
      return "user_annotation";
    case EventKind::PythonFunction:
      return "python_function";
    case EventKind::Runtime:
      return "cuda_runtime";
    case EventKind::Driver:
      return "cuda_driver";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "gpu_memcpy";
    case EventKind::Memset:
      return "gpu_memset";
    case EventKind::Sync:
      return "cuda_sync";
    case EventKind::GpuAnnotation:
      return "gpu_user_annotation";
    case EventKind::Collective:
      return "collective_comm";
    case EventKind::MemoryInstant:
      return "memory";
    case EventKind::Instant:
      return "instant";
    case EventKind::Other:
      return "other";
  }
  return "other";
}

const DeviceInfo* Timeline::device(int32_t id) const {
  for (const DeviceInfo& info : devices) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

}  // namespace ptadvise
