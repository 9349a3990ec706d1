// Helpers shared by the CUPTI record -> Kineto JSON tests (cupti_*_test.cpp): CUDA 13 record structs
// filled in by hand, and the written trace read back with a JSON parser.
#pragma once

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ptadvise/cupti_trace.h"

namespace cupti_test {

namespace capture = ptadvise::capture;

inline constexpr int64_t kBase = 1700000000000000000;  // baseTimeNanoseconds of every test trace
constexpr uint64_t at(uint64_t offset_ns) { return static_cast<uint64_t>(kBase) + offset_ns; }

// What cuptiGetCallbackName returns for the few callbacks used here.
inline std::string callback_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: return "cudaLaunchKernel_v7000";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: return "cudaMemcpyAsync_v3020";
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020: return "cudaStreamSynchronize_v3020";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020: return "cudaGetDevice_v3020";
      default: return "";
    }
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: return "cuLaunchKernel";
    case CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent: return "cuCtxGetCurrent";
    default: return "";
  }
}

inline capture::TraceHeader test_header() {
  capture::TraceHeader header;
  header.identity.host = "node7";
  header.identity.pid = 100;
  header.identity.rank = 3;
  header.identity.world_size = 8;
  header.base_time_ns = kBase;
  header.trace_name = "/tmp/node7_100.rank-3.pt.trace.json";
  header.cupti_version = 130001;
  header.command = "python3 train.py";
  return header;
}

template <typename Record>
const CUpti_Activity& as_activity(const Record& record) {
  return reinterpret_cast<const CUpti_Activity&>(record);
}

inline CUpti_ActivityAPI api_call(CUpti_ActivityKind kind, uint32_t cbid, uint32_t correlation, uint64_t start,
                           uint64_t end) {
  CUpti_ActivityAPI call{};
  call.kind = kind;
  call.cbid = cbid;
  call.start = start;
  call.end = end;
  call.processId = 100;
  call.threadId = 101;
  call.correlationId = correlation;
  return call;
}

inline CUpti_ActivityMarker2 marker(CUpti_ActivityFlag flags, uint32_t id, uint64_t timestamp, const char* name) {
  CUpti_ActivityMarker2 record{};
  record.kind = CUPTI_ACTIVITY_KIND_MARKER;
  record.flags = flags;
  record.timestamp = timestamp;
  record.id = id;
  record.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  record.objectId.pt.processId = 100;
  record.objectId.pt.threadId = 101;
  record.name = name;
  return record;
}

struct Event {
  std::string ph, cat, name;
  int64_t pid = -1, tid = -1;
  double ts = 0, dur = 0;
  int64_t id = -1;
  std::string bp;
  std::map<std::string, std::string> args;  // scalar args as their JSON text
};

struct ParsedTrace {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::vector<Event> events;

  explicit ParsedTrace(const std::string& json) {
    root = parser.parse(simdjson::padded_string(json));
    for (simdjson::dom::element item : root["traceEvents"].get_array()) {
      Event event;
      for (auto field : item.get_object()) {
        std::string_view key = field.key;
        auto value = field.value;
        if (key == "ph") event.ph = std::string(value.get_string().value());
        if (key == "cat") event.cat = std::string(value.get_string().value());
        if (key == "name") event.name = std::string(value.get_string().value());
        if (key == "pid") event.pid = value.get_int64();
        if (key == "tid") event.tid = value.get_int64();
        if (key == "ts") event.ts = value.get_double();
        if (key == "dur") event.dur = value.get_double();
        if (key == "id") event.id = value.get_int64();
        if (key == "bp") event.bp = std::string(value.get_string().value());
        if (key == "args") {
          for (auto arg : value.get_object()) event.args[std::string(arg.key)] = simdjson::minify(arg.value);
        }
      }
      events.push_back(std::move(event));
    }
  }
  std::vector<const Event*> with(std::string_view ph, std::string_view cat) const {
    std::vector<const Event*> found;
    for (const Event& event : events) {
      if (event.ph == ph && event.cat == cat) found.push_back(&event);
    }
    return found;
  }
};

}  // namespace cupti_test
