// The capture writer's edge cases (user names, late contexts, early timestamps, empty captures) and the
// loader reading its trace back.
// Built only when the CUDA toolkit's CUPTI headers are available.
#ifdef PTADVISE_TEST_CUPTI_FORMAT

#include <sstream>
#include <string>

#include "cupti_test_support.h"
#include "ptadvise/loader.h"

using namespace cupti_test;  // the record helpers, and `capture` for ptadvise::capture
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
