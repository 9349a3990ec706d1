// Names of CUPTI enumerations as Kineto writes them, and the per-call filters.
#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

#include "ptadvise/cupti_trace.h"

namespace ptadvise::capture {

std::string_view memcpy_kind_name(uint32_t copy_kind) {
  static constexpr std::array<std::string_view, 11> kNames = {
      "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < kNames.size() ? kNames[copy_kind] : kNames[0];
}

std::string_view memory_kind_name(uint32_t memory_kind) {
  static constexpr std::array<std::string_view, 8> kNames = {
      "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};
  return memory_kind < kNames.size() ? kNames[memory_kind] : kNames[0];
}

std::string memcpy_event_name(uint32_t copy_kind, uint32_t src_kind, uint32_t dst_kind) {
  std::string name = "Memcpy ";
  name += memcpy_kind_name(copy_kind);
  name += " (";
  name += memory_kind_name(src_kind);
  name += " -> ";
  name += memory_kind_name(dst_kind);
  name += ')';
  return name;
}

std::string memset_event_name(uint32_t memory_kind) {
  std::string name = "Memset (";
  name += memory_kind_name(memory_kind);
  name += ')';
  return name;
}

std::string_view sync_event_name(uint32_t sync_type) {
  switch (sync_type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Unknown Sync";
  }
}

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

std::string api_display_name(std::string_view name) {
  // Drop a trailing "_v<digits>" (API version), then the per-thread default stream variants.
  auto underscore = name.rfind("_v");
  if (underscore != std::string_view::npos && underscore + 2 < name.size()) {
    bool digits = true;
    for (char c : name.substr(underscore + 2)) digits = digits && c >= '0' && c <= '9';
    if (digits) name = name.substr(0, underscore);
  }
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (ends_with(name, suffix)) name = name.substr(0, name.size() - suffix.size());
  }
  return std::string(name);
}

bool keep_runtime_call(std::string_view name) {
  // Called around every launch by frameworks; thousands per step and never the cause of a stall.
  static constexpr std::array<std::string_view, 16> kNoise = {
      "cudaGetDevice",        "cudaSetDevice",          "cudaGetLastError",       "cudaPeekAtLastError",
      "cudaGetDeviceCount",   "cudaDeviceGetAttribute", "cudaFuncGetAttributes",  "cudaStreamIsCapturing",
      "cudaGetDeviceProperties", "cudaPointerGetAttributes", "cudaStreamGetCaptureInfo",
      "cudaDriverGetVersion", "cudaRuntimeGetVersion",  "cudaGetDriverEntryPoint", "cudaThreadExchangeStreamCaptureMode",
      "cudaOccupancyMaxActiveBlocksPerMultiprocessor"};
  for (std::string_view noise : kNoise) {
    if (name == noise) return false;
  }
  return !name.empty();
}

bool keep_driver_call(std::string_view name) {
  if (!starts_with(name, "cu")) return false;
  return starts_with(name, "cuLaunch") || starts_with(name, "cuMemcpy") || starts_with(name, "cuMemset") ||
         starts_with(name, "cuGraphLaunch") || name == "cuStreamSynchronize" || name == "cuCtxSynchronize" ||
         name == "cuEventSynchronize" || name == "cuStreamWaitEvent" || name == "cuMemAlloc" ||
         name == "cuMemFree" || name == "cuMemAllocAsync" || name == "cuMemFreeAsync";
}

bool starts_flow(std::string_view name) {
  return contains(name, "Launch") || contains(name, "Memcpy") || contains(name, "Memset") ||
         contains(name, "Synchronize") || contains(name, "WaitEvent");
}

std::string demangle(const char* name) {
  if (name == nullptr) return "unknown kernel";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                         &std::free);
  if (status != 0 || !demangled) return name;
  return demangled.get();
}

}  // namespace ptadvise::capture
