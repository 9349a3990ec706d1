// The CUPTI record -> Kineto JSON conversion, fed with CUDA 13 record structs filled in here and read
// back with a JSON parser. Built only when the CUDA toolkit's CUPTI headers are available.
#ifdef PTADVISE_TEST_CUPTI_FORMAT

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ptadvise/cupti_trace.h"
#include "ptadvise/loader.h"
#include "ptadvise/timeline.h"

namespace capture = ptadvise::capture;

namespace {

constexpr int64_t kBase = 1700000000000000000;  // baseTimeNanoseconds of every test trace
constexpr uint64_t at(uint64_t offset_ns) { return static_cast<uint64_t>(kBase) + offset_ns; }

// What cuptiGetCallbackName returns for the few callbacks used here.
std::string callback_name(CUpti_CallbackDomain domain, uint32_t cbid) {
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

capture::TraceHeader test_header() {
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

CUpti_ActivityAPI api_call(CUpti_ActivityKind kind, uint32_t cbid, uint32_t correlation, uint64_t start,
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

CUpti_ActivityMarker2 marker(CUpti_ActivityFlag flags, uint32_t id, uint64_t timestamp, const char* name) {
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

}  // namespace

TEST_CASE("capture names follow Kineto's spelling") {
  CHECK(capture::memcpy_event_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == "Memcpy HtoD (Pageable -> Device)");
  CHECK(capture::memcpy_event_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_PINNED) == "Memcpy DtoH (Device -> Pinned)");
  CHECK(capture::memcpy_event_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == "Memcpy PtoP (Device -> Device)");
  CHECK(capture::memcpy_event_name(99, 42, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED) == "Memcpy Unknown (Unknown -> Managed)");
  CHECK(capture::memset_event_name(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == "Memset (Device)");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) == "Stream Sync");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) == "Event Sync");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE) == "Context Sync");
  CHECK(capture::sync_event_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) == "Stream Wait Event");

  CHECK(capture::api_display_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
  CHECK(capture::api_display_name("cudaMemcpyAsync_ptsz_v7000") == "cudaMemcpyAsync");
  CHECK(capture::api_display_name("cuLaunchKernel") == "cuLaunchKernel");
  CHECK(capture::api_display_name("cudaFoo_vector") == "cudaFoo_vector");
  CHECK_FALSE(capture::keep_runtime_call("cudaGetDevice"));
  CHECK_FALSE(capture::keep_runtime_call("cudaGetLastError"));
  CHECK(capture::keep_runtime_call("cudaLaunchKernel"));
  CHECK(capture::keep_runtime_call("cudaStreamSynchronize"));
  CHECK(capture::keep_driver_call("cuLaunchKernel"));
  CHECK(capture::keep_driver_call("cuMemcpyHtoDAsync"));
  CHECK(capture::keep_driver_call("cuStreamSynchronize"));
  CHECK_FALSE(capture::keep_driver_call("cuCtxGetCurrent"));
  CHECK_FALSE(capture::keep_driver_call("cuGetProcAddress"));
  CHECK(capture::starts_flow("cudaLaunchKernel"));
  CHECK(capture::starts_flow("cudaMemcpyAsync"));
  CHECK(capture::starts_flow("cudaStreamSynchronize"));
  CHECK_FALSE(capture::starts_flow("cudaMalloc"));
  CHECK(capture::demangle("_Z6kernelPfi") == "kernel(float*, int)");
  CHECK(capture::demangle("triton_poi_fused_add_0") == "triton_poi_fused_add_0");
  CHECK(capture::demangle("_Znot a mangled name") == "_Znot a mangled name");
  CHECK(capture::demangle(nullptr) == "unknown kernel");
}

TEST_CASE("capture identity: rank variables and the trace file name") {
  std::map<std::string, std::string> env;
  auto lookup = [&env](const char* name) -> const char* {
    auto found = env.find(name);
    return found == env.end() ? nullptr : found->second.c_str();
  };
  capture::ProcessIdentity identity;
  identity.host = "gpu-node.example";
  identity.pid = 4242;
  capture::read_rank_environment(identity, lookup);
  CHECK_FALSE(identity.rank.has_value());
  CHECK(identity.world_size == 1);
  CHECK(capture::trace_file_name(identity) == "gpu-node.example_4242.pt.trace.json");

  env = {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}};
  capture::read_rank_environment(identity, lookup);
  CHECK(identity.rank == 5);
  CHECK(identity.local_rank == 1);
  CHECK(identity.world_size == 16);
  CHECK(capture::trace_file_name(identity) == "gpu-node.example_4242.rank-5.pt.trace.json");

  env = {{"RANK", "2"}, {"OMPI_COMM_WORLD_RANK", "7"}, {"WORLD_SIZE", "4"}};  // torchrun's RANK first
  capture::read_rank_environment(identity, lookup);
  CHECK(identity.rank == 2);
  CHECK(identity.world_size == 4);

  env = {{"RANK", "x1"}, {"LOCAL_RANK", "0"}};  // garbage is ignored; one process: local rank is the rank
  capture::read_rank_environment(identity, lookup);
  CHECK(identity.rank == 0);

  identity.host = "we/ird host";
  CHECK(capture::trace_file_name(identity) == "we-ird-host_4242.rank-0.pt.trace.json");
}

TEST_CASE("capture writer: CUDA 13 records become Kineto events with flows, steps and metadata") {
  std::ostringstream out;
  capture::TraceWriter writer(out, test_header(), callback_name);

  CUpti_ActivityDevice5 device{};
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  device.id = 0;
  device.name = "NVIDIA H100 80GB HBM3";
  device.globalMemorySize = 85045477376ull;
  device.computeCapabilityMajor = 9;
  device.computeCapabilityMinor = 0;
  device.numMultiprocessors = 132;
  device.numThreadsPerWarp = 32;
  writer.add_record(as_activity(device));

  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 1;
  context.deviceId = 0;
  writer.add_record(as_activity(context));

  // Step 0 on the host thread: a launch, a pageable copy, a memset, a sync; noise calls filtered.
  auto step_start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, at(500), "ProfilerStep#0");
  writer.add_record(as_activity(step_start));
  auto launch = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 7, at(1000),
                         at(6000));
  writer.add_record(as_activity(launch));
  auto get_device = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 8,
                             at(6100), at(6200));
  writer.add_record(as_activity(get_device));
  auto triton_launch =
      api_call(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 9, at(6500), at(7000));
  writer.add_record(as_activity(triton_launch));
  auto context_query =
      api_call(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 10, at(7100), at(7200));
  writer.add_record(as_activity(context_query));
  auto copy_call = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 11,
                            at(8000), at(9000));
  writer.add_record(as_activity(copy_call));
  auto sync_call = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 12,
                            at(40000), at(52000));
  writer.add_record(as_activity(sync_call));

  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.name = "_Z6kernelPfi";
  kernel.start = at(10000);
  kernel.end = at(30000);
  kernel.deviceId = 0;
  kernel.contextId = 1;
  kernel.streamId = 7;
  kernel.correlationId = 7;
  kernel.gridX = 4;
  kernel.gridY = 1;
  kernel.gridZ = 1;
  kernel.blockX = 128;
  kernel.blockY = 1;
  kernel.blockZ = 1;
  kernel.registersPerThread = 32;
  kernel.staticSharedMemory = 1024;
  kernel.dynamicSharedMemory = 2048;
  writer.add_record(as_activity(kernel));

  CUpti_ActivityKernel10 triton_kernel = kernel;
  triton_kernel.name = "triton_poi_fused_add_0";
  triton_kernel.start = at(30500);
  triton_kernel.end = at(31500);
  triton_kernel.correlationId = 9;
  writer.add_record(as_activity(triton_kernel));

  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  copy.bytes = 4096;
  copy.start = at(32000);
  copy.end = at(34048);  // 2048 ns: 2 GB/s
  copy.deviceId = 0;
  copy.contextId = 1;
  copy.streamId = 7;
  copy.correlationId = 11;
  writer.add_record(as_activity(copy));

  CUpti_ActivityMemset4 memset{};
  memset.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  memset.bytes = 512;
  memset.start = at(35000);
  memset.end = at(35500);
  memset.deviceId = 0;
  memset.contextId = 1;
  memset.streamId = 7;
  memset.correlationId = 13;
  memset.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  writer.add_record(as_activity(memset));

  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = at(40100);
  sync.end = at(51900);
  sync.correlationId = 12;
  sync.contextId = 1;
  sync.streamId = 7;
  sync.cudaEventId = 0xFFFFFFFFu;
  writer.add_record(as_activity(sync));

  auto step_end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, at(60000), nullptr);
  writer.add_record(as_activity(step_end));
  auto stray_end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 99, at(61000), nullptr);
  writer.add_record(as_activity(stray_end));
  auto never_ended = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, at(62000), "ProfilerStep#1");
  writer.add_record(as_activity(never_ended));

  CUpti_ActivityOverhead3 overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  overhead.objectId.pt.processId = 100;
  overhead.objectId.pt.threadId = 101;
  overhead.start = at(70000);
  overhead.end = at(71500);
  writer.add_record(as_activity(overhead));

  CUpti_ActivityKernel10 no_time = kernel;
  no_time.start = 0;  // "could not be collected"
  writer.add_record(as_activity(no_time));

  writer.add_dropped_records(3);
  writer.finish();

  const capture::CaptureStats& stats = writer.stats();
  CHECK(stats.records == 19);
  CHECK(stats.filtered_api_calls == 2);
  CHECK(stats.missing_timestamps == 1);
  CHECK(stats.unpaired_ranges == 2);
  CHECK(stats.dropped_records == 3);
  CHECK(stats.overhead_ns.at("CUPTI buffer flush") == 1500);

  ParsedTrace trace(out.str());
  CHECK(int64_t(trace.root["schemaVersion"]) == 1);
  CHECK(int64_t(trace.root["baseTimeNanoseconds"]) == kBase);
  CHECK(std::string_view(trace.root["displayTimeUnit"]) == "ms");
  CHECK(int64_t(trace.root["distributedInfo"]["rank"]) == 3);
  CHECK(int64_t(trace.root["distributedInfo"]["world_size"]) == 8);
  CHECK(std::string_view(trace.root["traceName"]) == "/tmp/node7_100.rank-3.pt.trace.json");
  auto device_properties = trace.root["deviceProperties"].get_array();
  REQUIRE(device_properties.size() == 1);
  CHECK(std::string_view(device_properties.at(0)["name"]) == "NVIDIA H100 80GB HBM3");
  CHECK(int64_t(device_properties.at(0)["computeMajor"]) == 9);
  CHECK(int64_t(device_properties.at(0)["numSms"]) == 132);
  CHECK(int64_t(device_properties.at(0)["totalGlobalMem"]) == 85045477376);
  auto block = trace.root["ptadvise"];
  CHECK(int64_t(block["dropped records"]) == 3);
  CHECK(int64_t(block["filtered api calls"]) == 2);
  CHECK(int64_t(block["overhead"]["CUPTI buffer flush"]["ns"]) == 1500);
  CHECK(std::string_view(block["command"]) == "python3 train.py");

  auto kernels = trace.with("X", "kernel");
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0]->name == "kernel(float*, int)");
  CHECK(kernels[0]->pid == 0);
  CHECK(kernels[0]->tid == 7);
  CHECK(kernels[0]->ts == doctest::Approx(10.0));
  CHECK(kernels[0]->dur == doctest::Approx(20.0));
  CHECK(kernels[0]->args.at("correlation") == "7");
  CHECK(kernels[0]->args.at("grid") == "[4,1,1]");
  CHECK(kernels[0]->args.at("block") == "[128,1,1]");
  CHECK(kernels[0]->args.at("shared memory") == "3072");
  CHECK(kernels[0]->args.at("registers per thread") == "32");
  CHECK(kernels[1]->name == "triton_poi_fused_add_0");

  auto copies = trace.with("X", "gpu_memcpy");
  REQUIRE(copies.size() == 1);
  CHECK(copies[0]->name == "Memcpy HtoD (Pageable -> Device)");
  CHECK(copies[0]->args.at("bytes") == "4096");
  CHECK(copies[0]->args.at("memory bandwidth (GB/s)") == "2");
  CHECK(copies[0]->dur == doctest::Approx(2.048));
  auto memsets = trace.with("X", "gpu_memset");
  REQUIRE(memsets.size() == 1);
  CHECK(memsets[0]->name == "Memset (Device)");
  auto syncs = trace.with("X", "cuda_sync");
  REQUIRE(syncs.size() == 1);
  CHECK(syncs[0]->name == "Stream Sync");
  CHECK(syncs[0]->pid == 0);
  CHECK(syncs[0]->tid == 7);
  CHECK(syncs[0]->args.at("cuda_sync_kind") == "\"Stream Sync\"");

  auto runtime = trace.with("X", "cuda_runtime");
  REQUIRE(runtime.size() == 3);  // cudaGetDevice filtered
  CHECK(runtime[0]->name == "cudaLaunchKernel");
  CHECK(runtime[0]->pid == 100);
  CHECK(runtime[0]->tid == 101);
  CHECK(runtime[0]->ts == doctest::Approx(1.0));
  CHECK(runtime[0]->dur == doctest::Approx(5.0));
  CHECK(runtime[0]->args.at("cbid") == "211");
  CHECK(runtime[1]->name == "cudaMemcpyAsync");
  CHECK(runtime[2]->name == "cudaStreamSynchronize");
  auto driver = trace.with("X", "cuda_driver");
  REQUIRE(driver.size() == 1);  // cuCtxGetCurrent filtered
  CHECK(driver[0]->name == "cuLaunchKernel");

  auto steps = trace.with("X", "user_annotation");
  REQUIRE(steps.size() == 1);  // the range never ended is left out
  CHECK(steps[0]->name == "ProfilerStep#0");
  CHECK(steps[0]->pid == 100);
  CHECK(steps[0]->tid == 101);
  CHECK(steps[0]->ts == doctest::Approx(0.5));
  CHECK(steps[0]->dur == doctest::Approx(59.5));
  CHECK(trace.with("X", "overhead").size() == 1);

  // Every GPU op and sync ends a flow started by its launch call, with the correlation as id.
  auto starts = trace.with("s", "ac2g");
  auto ends = trace.with("f", "ac2g");
  std::vector<int64_t> start_ids, end_ids;
  for (const Event* flow : starts) start_ids.push_back(flow->id);
  for (const Event* flow : ends) {
    end_ids.push_back(flow->id);
    CHECK(flow->bp == "e");
    CHECK(flow->pid == 0);
    CHECK(flow->tid == 7);
  }
  CHECK(start_ids == std::vector<int64_t>{7, 9, 11, 12});
  CHECK(end_ids == std::vector<int64_t>{7, 9, 11, 13, 12});
  for (const Event* flow : starts) {
    CHECK(flow->pid == 100);
    CHECK(flow->tid == 101);
  }
}

TEST_CASE("capture writer: user-provided names stay valid JSON") {
  std::ostringstream out;
  capture::TraceWriter writer(out, test_header(), callback_name);
  // A quote, a backslash, a control character, valid UTF-8 (é) and a byte that is not UTF-8.
  std::string name = "ptadvise.sync item C:\\data\\\"x\".py:3\t\xC3\xA9\xFF";
  auto start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 5, at(100), name.c_str());
  auto end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 5, at(200), nullptr);
  writer.add_record(as_activity(start));
  writer.add_record(as_activity(end));
  writer.finish();
  ParsedTrace trace(out.str());
  auto ranges = trace.with("X", "user_annotation");
  REQUIRE(ranges.size() == 1);
  CHECK(ranges[0]->name == "ptadvise.sync item C:\\data\\\"x\".py:3\t\xC3\xA9?");
}

TEST_CASE("capture writer: a sync seen before its context is placed on the right device at the end") {
  std::ostringstream out;
  capture::TraceWriter writer(out, test_header(), callback_name);
  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  sync.start = at(1000);
  sync.end = at(2000);
  sync.correlationId = 4;
  sync.contextId = 9;
  sync.streamId = 0xFFFFFFFFu;
  writer.add_record(as_activity(sync));
  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 9;
  context.deviceId = 2;
  writer.add_record(as_activity(context));
  writer.finish();
  ParsedTrace trace(out.str());
  auto syncs = trace.with("X", "cuda_sync");
  REQUIRE(syncs.size() == 1);
  CHECK(syncs[0]->name == "Context Sync");
  CHECK(syncs[0]->pid == 2);
  CHECK(syncs[0]->args.at("stream") == "-1");
  CHECK(trace.root["deviceProperties"].get_array().size() == 0);
}

TEST_CASE("capture writer: timestamps before the base and an empty capture") {
  std::ostringstream out;
  capture::TraceHeader header = test_header();
  header.identity.rank.reset();
  capture::TraceWriter writer(out, header, nullptr);
  auto call = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, 12345, 1, at(0) - 1500, at(0) + 250);
  writer.add_record(as_activity(call));
  writer.finish({"a note"});
  writer.finish();  // a second call writes nothing more
  ParsedTrace trace(out.str());
  auto runtime = trace.with("X", "cuda_runtime");
  REQUIRE(runtime.size() == 1);
  CHECK(runtime[0]->name == "runtime call 12345");  // no resolver: named by its id
  CHECK(runtime[0]->ts == doctest::Approx(-1.5));
  CHECK(runtime[0]->dur == doctest::Approx(1.75));
  CHECK(int64_t(trace.root["distributedInfo"]["rank"]) == 0);
  CHECK(std::string_view(trace.root["ptadvise"]["notes"].at(0)) == "a note");
}

TEST_CASE("capture writer: the loader reads the trace back with kinds, links, tracks and metadata") {
  std::ostringstream out;
  capture::TraceWriter writer(out, test_header(), callback_name);
  CUpti_ActivityDevice5 device{};
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  device.id = 0;
  device.name = "NVIDIA A100-SXM4-80GB";
  device.computeCapabilityMajor = 8;
  device.numMultiprocessors = 108;
  device.globalMemorySize = 85899345920ull;
  writer.add_record(as_activity(device));
  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 1;
  writer.add_record(as_activity(context));
  // Two steps, each: the batch request, a pageable copy, a kernel, and .item()'s sync.
  uint32_t correlation = 1;
  for (uint64_t step = 0; step < 2; ++step) {
    uint64_t t0 = step * 1000000;  // 1 ms apart
    std::string step_name = "ProfilerStep#" + std::to_string(step);
    auto step_start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 100 + 2 * step, at(t0), step_name.c_str());
    writer.add_record(as_activity(step_start));
    auto loader_start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 101 + 2 * step, at(t0 + 1000),
                               "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    writer.add_record(as_activity(loader_start));
    auto loader_end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 101 + 2 * step, at(t0 + 300000), nullptr);
    writer.add_record(as_activity(loader_end));
    auto copy_call = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                              correlation, at(t0 + 310000), at(t0 + 320000));
    writer.add_record(as_activity(copy_call));
    CUpti_ActivityMemcpy6 copy{};
    copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    copy.bytes = 1 << 20;
    copy.start = at(t0 + 312000);
    copy.end = at(t0 + 319000);
    copy.contextId = 1;
    copy.streamId = 7;
    copy.correlationId = correlation++;
    writer.add_record(as_activity(copy));
    auto launch = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                           correlation, at(t0 + 330000), at(t0 + 335000));
    writer.add_record(as_activity(launch));
    CUpti_ActivityKernel10 kernel{};
    kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    kernel.name = "_Z4gemmPKfS0_Pfiii";
    kernel.start = at(t0 + 340000);
    kernel.end = at(t0 + 700000);
    kernel.contextId = 1;
    kernel.streamId = 7;
    kernel.correlationId = correlation++;
    writer.add_record(as_activity(kernel));
    auto item_start = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 200 + step, at(t0 + 336000),
                             "ptadvise.sync item train.py:42");
    writer.add_record(as_activity(item_start));
    auto sync_call = api_call(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                              correlation, at(t0 + 337000), at(t0 + 701000));
    writer.add_record(as_activity(sync_call));
    CUpti_ActivitySynchronization2 sync{};
    sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sync.start = at(t0 + 337500);
    sync.end = at(t0 + 700500);
    sync.contextId = 1;
    sync.streamId = 7;
    sync.correlationId = correlation++;
    writer.add_record(as_activity(sync));
    auto item_end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 200 + step, at(t0 + 702000), nullptr);
    writer.add_record(as_activity(item_end));
    auto step_end = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 100 + 2 * step, at(t0 + 990000), nullptr);
    writer.add_record(as_activity(step_end));
  }
  writer.finish();

  auto loaded = ptadvise::load_trace_bytes(out.str(), "capture-test");
  if (auto* error = std::get_if<ptadvise::LoadError>(&loaded)) FAIL(error->message);
  const ptadvise::Timeline& timeline = std::get<ptadvise::Timeline>(loaded);
  CHECK(timeline.stats.malformed_events == 0);
  CHECK(timeline.stats.warnings.empty());
  CHECK(timeline.rank == 3);
  CHECK(timeline.world_size == 8);
  REQUIRE(timeline.devices.size() == 1);
  CHECK(timeline.devices[0].name == "NVIDIA A100-SXM4-80GB");
  CHECK(timeline.devices[0].compute_major == 8);
  CHECK(timeline.devices[0].num_sms == 108);

  std::map<ptadvise::EventKind, int> kinds;
  std::map<std::string, ptadvise::EventIndex> first_of;
  for (ptadvise::EventIndex i = 0; i < timeline.events.size(); ++i) {
    ++kinds[timeline.events.kind[i]];
    first_of.emplace(std::string(timeline.name(i)), i);
  }
  CHECK(kinds[ptadvise::EventKind::Kernel] == 2);
  CHECK(kinds[ptadvise::EventKind::Memcpy] == 2);
  CHECK(kinds[ptadvise::EventKind::Sync] == 2);
  CHECK(kinds[ptadvise::EventKind::Runtime] == 6);
  CHECK(kinds[ptadvise::EventKind::UserAnnotation] == 6);  // 2 steps, 2 loader waits, 2 syncs

  // Times: ProfilerStep#1 starts 1 ms after ProfilerStep#0 and lasts 990 µs.
  ptadvise::EventIndex step0 = first_of.at("ProfilerStep#0");
  ptadvise::EventIndex step1 = first_of.at("ProfilerStep#1");
  CHECK(timeline.events.ts_ns[step1] - timeline.events.ts_ns[step0] == 1000000);
  CHECK(timeline.events.dur_ns[step1] == 990000);
  CHECK(timeline.origin_ns + timeline.events.ts_ns[step0] == kBase);

  // GPU op <-> launching call, through the correlation ids.
  ptadvise::EventIndex gemm = first_of.at("gemm(float const*, float const*, float*, int, int, int)");
  ptadvise::EventIndex launch = timeline.events.launch[gemm];
  REQUIRE(launch != ptadvise::kNone);
  CHECK(timeline.name(launch) == "cudaLaunchKernel");
  CHECK(timeline.events.launch[launch] == gemm);
  ptadvise::EventIndex copy = first_of.at("Memcpy HtoD (Pageable -> Device)");
  REQUIRE(timeline.events.launch[copy] != ptadvise::kNone);
  CHECK(timeline.name(timeline.events.launch[copy]) == "cudaMemcpyAsync");
  CHECK(timeline.arg_int(copy, "bytes") == 1 << 20);

  // Host ranges nest on the host thread: loader wait and sync range inside the step.
  ptadvise::EventIndex wait = first_of.at("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  CHECK(timeline.events.parent[wait] == step0);
  ptadvise::EventIndex sync_call = first_of.at("cudaStreamSynchronize");
  REQUIRE(timeline.events.parent[sync_call] != ptadvise::kNone);
  CHECK(timeline.name(timeline.events.parent[sync_call]) == "ptadvise.sync item train.py:42");
  const ptadvise::Track& gpu_track = timeline.tracks[timeline.events.track[gemm]];
  CHECK(gpu_track.kind == ptadvise::TrackKind::Gpu);
  CHECK(gpu_track.device == 0);
  CHECK(gpu_track.stream == 7);
  const ptadvise::Track& cpu_track = timeline.tracks[timeline.events.track[step0]];
  CHECK(cpu_track.kind == ptadvise::TrackKind::Cpu);
  CHECK(cpu_track.pid == 100);
  CHECK(cpu_track.tid == 101);
}

#endif  // PTADVISE_TEST_CUPTI_FORMAT
