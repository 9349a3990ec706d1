// Is there a CUDA driver and a device to capture from? Asked before launching, so a machine without one
// gets a clear answer instead of a silent, empty capture.
#include <dlfcn.h>

#include <string>

#include "ptadvise/capture.h"

namespace ptadvise {

DriverProbe probe_cuda_driver() {
  DriverProbe probe;
  // Never closed: unloading the driver library under a live CUDA state is not supported.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* why = dlerror();
    probe.message = std::string("no NVIDIA driver: libcuda.so.1 cannot be loaded") +
                    (why != nullptr ? std::string(" (") + why + ")" : std::string());
    return probe;
  }
  using InitFunction = int (*)(unsigned int);
  using CountFunction = int (*)(int*);
  auto init = reinterpret_cast<InitFunction>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFunction>(dlsym(driver, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr) {
    probe.message = "the NVIDIA driver library lacks cuInit/cuDeviceGetCount";
    return probe;
  }
  int status = init(0);
  constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
  if (status == kNoDevice) {
    probe.message = "the NVIDIA driver found no CUDA device";
    return probe;
  }
  if (status != 0) {
    probe.message = "the NVIDIA driver failed to initialise (CUresult " + std::to_string(status) + ")";
    return probe;
  }
  if (count(&probe.device_count) != 0 || probe.device_count <= 0) {
    probe.message = "the NVIDIA driver found no CUDA device";
    return probe;
  }
  probe.usable = true;
  return probe;
}

}  // namespace ptadvise
