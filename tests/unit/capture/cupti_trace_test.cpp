// The CUPTI record -> Kineto JSON conversion of a whole CUDA 13 capture: events, flows, steps, metadata.
// Built only when the CUDA toolkit's CUPTI headers are available.
#ifdef PTADVISE_TEST_CUPTI_FORMAT

#include <sstream>
#include <string>

#include "cupti_test_support.h"
#include "ptadvise/loader.h"

using namespace cupti_test;  // the record helpers, and `capture` for ptadvise::capture
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

#endif  // PTADVISE_TEST_CUPTI_FORMAT
