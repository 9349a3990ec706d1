// The loader on small inline traces of every era and quirk: formats, metadata, kinds, devices.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "loader_test_support.h"
#include "ptadvise/loader.h"

using namespace loader_test;  // the helpers and the ptadvise names they use

TEST_CASE("loader: 2023 traces (ac2g flows, integer µs) load with exact kinds, times, tracks and ids") {
  TraceBuilder trace = step_trace(Era::Kineto2023);
  trace.device(0, "NVIDIA A100-SXM4-80GB", 8, 0, 85899345920, 108).distributed(3, 8);
  Timeline timeline = trace.load();

  CHECK(timeline.format == "kineto");
  REQUIRE(timeline.events.size() == 5);
  CHECK(timeline.stats.events_seen == 7);  // 5 events + the flow pair
  CHECK(timeline.stats.malformed_events == 0);
  CHECK(timeline.stats.warnings.empty());
  CHECK(timeline.rank == 3);
  CHECK(timeline.world_size == 8);
  CHECK(timeline.origin_ns == 1000000);

  EventIndex step = find(timeline, "ProfilerStep#3");
  EventIndex op = find(timeline, "aten::mm");
  EventIndex launch = find(timeline, "cudaLaunchKernel");
  EventIndex kernel = find(timeline, "gemm_kernel");
  EventIndex copy = find(timeline, "Memcpy HtoD (Pageable -> Device)");
  CHECK(timeline.events.kind[step] == EventKind::UserAnnotation);
  CHECK(timeline.events.kind[op] == EventKind::CpuOp);
  CHECK(timeline.events.kind[launch] == EventKind::Runtime);
  CHECK(timeline.events.kind[kernel] == EventKind::Kernel);
  CHECK(timeline.events.kind[copy] == EventKind::Memcpy);
  CHECK(timeline.events.ts_ns[step] == 0);
  CHECK(timeline.events.dur_ns[step] == 500000);
  CHECK(timeline.events.ts_ns[op] == 10000);
  CHECK(timeline.events.ts_ns[kernel] == 60000);
  CHECK(timeline.events.dur_ns[kernel] == 200000);
  CHECK(timeline.events.correlation[launch] == 1000);
  CHECK(timeline.events.correlation[kernel] == 1000);
  CHECK(timeline.events.correlation[copy] == 1500);
  CHECK(timeline.events.correlation[op] == -1);
  CHECK(timeline.events.external_id[op] == 11);
  CHECK(timeline.events.external_id[kernel] == -1);
  CHECK(timeline.strings.view(timeline.events.category[kernel]) == "kernel");
  CHECK(timeline.flow_correlation == std::vector<int64_t>{1000});

  REQUIRE(timeline.tracks.size() == 2);
  const auto& cpu = timeline.tracks[timeline.events.track[op]];
  CHECK(cpu.kind == TrackKind::Cpu);
  CHECK(cpu.pid == 4242);
  CHECK(cpu.tid == 1);
  CHECK(timeline.events.track[step] == timeline.events.track[op]);
  const auto& gpu = timeline.tracks[timeline.events.track[kernel]];
  CHECK(gpu.kind == TrackKind::Gpu);
  CHECK(gpu.device == 0);
  CHECK(gpu.stream == 7);
  CHECK(timeline.events.track[copy] == timeline.events.track[kernel]);

  REQUIRE(timeline.devices.size() == 1);
  const ptadvise::DeviceInfo* device = timeline.device(0);
  REQUIRE(device != nullptr);
  CHECK(device->name == "NVIDIA A100-SXM4-80GB");
  CHECK(device->compute_major == 8);
  CHECK(device->compute_minor == 0);
  CHECK(device->total_global_mem == 85899345920);
  CHECK(device->num_sms == 108);
  CHECK(timeline.device(1) == nullptr);

  CHECK(timeline.arg_int(copy, "bytes") == 4096);
  CHECK(timeline.arg_int(kernel, "stream") == 7);
  CHECK(timeline.arg_string(kernel, "grid") == "[1, 1, 1]");
  CHECK(timeline.args_json(op) == "{\"External id\": 11}");
}

TEST_CASE("loader: 2020 bare arrays with capitalised categories and 'stream N' GPU tids") {
  Timeline timeline = step_trace(Era::Kineto2020).load();
  CHECK(timeline.format == "kineto-array");
  REQUIRE(timeline.events.size() == 5);
  EventIndex step = find(timeline, "ProfilerStep#3");
  EventIndex kernel = find(timeline, "gemm_kernel");
  EventIndex copy = find(timeline, "Memcpy HtoD (Pageable -> Device)");
  CHECK(timeline.events.kind[step] == EventKind::CpuOp);  // 2020 wrote ProfilerStep as an Operator
  CHECK(timeline.events.kind[find(timeline, "cudaLaunchKernel")] == EventKind::Runtime);
  CHECK(timeline.events.kind[kernel] == EventKind::Kernel);
  CHECK(timeline.events.kind[copy] == EventKind::Memcpy);
  CHECK(timeline.strings.view(timeline.events.category[kernel]) == "Kernel");
  const auto& gpu = timeline.tracks[timeline.events.track[kernel]];
  CHECK(gpu.kind == TrackKind::Gpu);
  CHECK(timeline.strings.view(gpu.tid_text) == "stream 7");
  CHECK(gpu.tid == -1);
  CHECK(gpu.stream == 7);
  CHECK(gpu.device == 0);
  CHECK(timeline.flow_correlation == std::vector<int64_t>{1000});  // "async" flows
}

TEST_CASE("loader: 2021 objects keep the Call stack arg; 2022 async_cpu_to_gpu flows are recorded") {
  Timeline timeline2021 = step_trace(Era::Kineto2021).load();
  CHECK(timeline2021.format == "kineto");
  EventIndex op = find(timeline2021, "aten::mm");
  CHECK(timeline2021.events.kind[op] == EventKind::CpuOp);
  CHECK(timeline2021.arg_string(op, "Call stack") == "train.py(12): step;<built-in method aten::mm>");
  CHECK(timeline2021.events.external_id[op] == 11);

  Timeline timeline2022 = step_trace(Era::Kineto2022).load();
  CHECK(timeline2022.events.kind[find(timeline2022, "ProfilerStep#3")] == EventKind::UserAnnotation);
  CHECK(timeline2022.events.kind[find(timeline2022, "gemm_kernel")] == EventKind::Kernel);
  CHECK(timeline2022.flow_correlation == std::vector<int64_t>{1000});
}

TEST_CASE("loader: 3-decimal µs relative to baseTimeNanoseconds convert exactly, as numbers or strings") {
  for (Era era : {Era::RelativeFloatUs, Era::RelativeStringUs}) {
    CAPTURE(static_cast<int>(era));
    TraceBuilder trace(era);
    trace.base_time_ns(1767189312000000000);
    trace.cpu_op("aten::add", 88511388202.755, 3.001);
    trace.kernel("add_kernel", 88511388203.999, 0.769, 7);
    Timeline timeline = trace.load();
    REQUIRE(timeline.events.size() == 2);
    CHECK(timeline.origin_ns == 1767189312000000000 + 88511388202755);
    CHECK(timeline.events.ts_ns[0] == 0);
    CHECK(timeline.events.dur_ns[0] == 3001);
    CHECK(timeline.events.ts_ns[1] == 1244);
    CHECK(timeline.events.dur_ns[1] == 769);
  }
}

TEST_CASE("loader: metadata after traceEvents (baseTimeNanoseconds, distributedInfo) is applied at the end") {
  TraceBuilder trace(Era::RelativeStringUs);
  trace.base_time_ns(1000000000000).distributed(5, 16).metadata_after_events();
  trace.cpu_op("aten::add", 10.5, 1);
  Timeline timeline = trace.load();
  CHECK(trace.json().find("\"traceEvents\"") < trace.json().find("\"baseTimeNanoseconds\""));
  CHECK(timeline.origin_ns == 1000000010500);
  CHECK(timeline.rank == 5);
  CHECK(timeline.world_size == 16);
}

TEST_CASE("loader: the legacy non-Kineto export becomes CPU ops on the 'CPU functions' track") {
  TraceBuilder trace(Era::Legacy);
  trace.cpu_op("aten::matmul", 105, 322).cpu_op("aten::mm", 111, 315);
  Timeline timeline = trace.load();
  CHECK(timeline.format == "legacy");
  REQUIRE(timeline.events.size() == 2);
  CHECK(timeline.events.kind[0] == EventKind::CpuOp);
  CHECK(timeline.events.kind[1] == EventKind::CpuOp);
  CHECK(timeline.events.ts_ns[1] == 6000);
  CHECK(timeline.events.dur_ns[1] == 315000);
  CHECK(timeline.events.args_length[0] == 2);  // "{}"
  REQUIRE(timeline.tracks.size() == 1);
  CHECK(timeline.strings.view(timeline.tracks[0].pid_text) == "CPU functions");
  CHECK(timeline.tracks[0].pid == -1);
  CHECK(timeline.tracks[0].tid == 1);
}

TEST_CASE("loader: a real PyTorch 1.13 legacy export (testdata/loader/legacy_torch113.json)") {
  auto result = ptadvise::load_trace_file(PTADVISE_SOURCE_DIR "/testdata/loader/legacy_torch113.json");
  REQUIRE(std::holds_alternative<Timeline>(result));
  const Timeline& timeline = std::get<Timeline>(result);
  CHECK(timeline.format == "legacy");
  CHECK(timeline.events.size() == 34);
  CHECK(timeline.stats.malformed_events == 0);
  EventIndex step = find(timeline, "ProfilerStep#0");
  CHECK(timeline.events.kind[step] == EventKind::CpuOp);
  CHECK(timeline.events.ts_ns[step] == (437 - 287) * 1000);
  CHECK(timeline.events.dur_ns[step] == 1231000);
  CHECK(timeline.origin_ns == 287000);
}

TEST_CASE("loader: args accessors accept numbers as strings, big integers and nested values") {
  TraceBuilder trace;
  trace.complete("kernel", "ncclDevKernel_AllReduce", 10, 5, "0", "7",
                 "\"correlation\": \"77\", \"External id\": 18446744073709551615, \"device\": 0, \"stream\": 7, "
                 "\"bytes\": \"1024\", \"Comms Id\": 18446744073709551615, \"ratio\": 0.25, \"ratio text\": "
                 "\"0.5\", \"dims\": [[2, 3], []], \"nothing\": null, \"flag\": true, \"label\": \"a\\\"b\"");
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 1);
  CHECK(timeline.events.correlation[0] == 77);
  CHECK(timeline.events.external_id[0] == -1);
  CHECK(timeline.arg_int(0, "bytes") == 1024);
  CHECK(timeline.arg_double(0, "bytes") == 1024.0);
  CHECK(timeline.arg_int(0, "Comms Id") == std::nullopt);
  CHECK(timeline.arg_string(0, "Comms Id") == "18446744073709551615");
  CHECK(timeline.arg_double(0, "ratio") == 0.25);
  CHECK(timeline.arg_double(0, "ratio text") == 0.5);
  CHECK(timeline.arg_int(0, "ratio") == std::nullopt);
  CHECK(timeline.arg_string(0, "ratio") == "0.25");
  CHECK(timeline.arg_string(0, "dims") == "[[2, 3], []]");
  CHECK(timeline.arg_string(0, "nothing") == std::nullopt);
  CHECK(timeline.arg_string(0, "flag") == "true");
  CHECK(timeline.arg_string(0, "label") == "a\"b");
  CHECK(timeline.arg_int(0, "missing") == std::nullopt);
  CHECK(timeline.arg_int(0, "dims") == std::nullopt);
}

TEST_CASE("loader: metadata names tracks; string pids and instants land on CPU tracks") {
  TraceBuilder trace;
  trace.process_name("4242", "python3").thread_name("4242", "1", "MainThread").process_name("0", "GPU 0");
  trace.cpu_op("aten::add", 10, 5);
  trace.cpu_op("aten::add", 12, 1, "", 2);
  trace.kernel("k", 20, 5, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": 5, \"dur\": 100, \"pid\": \"Spans\", \"tid\": "
                  "\"PyTorch Profiler\", \"name\": \"PyTorch Profiler (0)\", \"args\": {\"Op count\": 0}}");
  trace.raw_event("{\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\", \"pid\": "
                  "\"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": 5}");
  trace.memory_instant(30, 1 << 20, 2 << 20);
  trace.raw_event("{\"ph\": \"C\", \"name\": \"counter\", \"pid\": 1, \"ts\": 5, \"args\": {\"v\": 1}}");
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 6);
  CHECK(timeline.stats.unknown_phases == 1);
  auto track_name = [&](EventIndex i) { return timeline.strings.view(timeline.tracks[timeline.events.track[i]].name); };
  CHECK(track_name(find(timeline, "aten::add")) == "MainThread");
  CHECK(track_name(find(timeline, "aten::add", 1)) == "python3");
  CHECK(track_name(find(timeline, "k")) == "GPU 0");
  EventIndex span = find(timeline, "PyTorch Profiler (0)");
  CHECK(timeline.events.kind[span] == EventKind::Other);
  CHECK(timeline.tracks[timeline.events.track[span]].kind == TrackKind::Cpu);
  CHECK(timeline.strings.view(timeline.tracks[timeline.events.track[span]].pid_text) == "Spans");
  CHECK(timeline.tracks[timeline.events.track[span]].pid == -1);
  EventIndex start = find(timeline, "Iteration Start: PyTorch Profiler");
  CHECK(timeline.events.kind[start] == EventKind::Instant);
  CHECK(timeline.events.dur_ns[start] == 0);
  EventIndex memory = find(timeline, "[memory]");
  CHECK(timeline.events.kind[memory] == EventKind::MemoryInstant);
  CHECK(timeline.arg_int(memory, "Total Allocated") == 1 << 20);
  CHECK(timeline.tracks.size() == 5);
}

TEST_CASE("loader: GPU-side kinds (sync, gpu annotation, memset, driver) and negative durations") {
  TraceBuilder trace;
  trace.sync("Stream Sync", 10, 4, 9, 0, 7);
  trace.gpu_annotation("ProfilerStep#1", 5, 100, 1, 20);
  trace.memset(30, 2, 512, 12, 0, 7);
  trace.driver("cuLaunchKernel", 1, 2, 13);
  trace.cpu_op("aten::weird", 40, -3);
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 5);
  EventIndex sync = find(timeline, "Stream Sync");
  EventIndex annotation = find(timeline, "ProfilerStep#1");
  CHECK(timeline.events.kind[sync] == EventKind::Sync);
  CHECK(timeline.events.correlation[sync] == 9);
  CHECK(timeline.events.kind[annotation] == EventKind::GpuAnnotation);
  CHECK(timeline.tracks[timeline.events.track[annotation]].device == 1);
  CHECK(timeline.tracks[timeline.events.track[annotation]].stream == 20);
  CHECK(timeline.events.kind[find(timeline, "Memset (Device)")] == EventKind::Memset);
  CHECK(timeline.events.kind[find(timeline, "cuLaunchKernel")] == EventKind::Driver);
  CHECK(timeline.events.dur_ns[find(timeline, "aten::weird")] == 0);
  CHECK(timeline.stats.negative_durations == 1);
  CHECK(timeline.stats.warnings == std::vector<std::string>{"trace.json: clamped 1 negative duration to 0"});
}

TEST_CASE("loader: EventKind names") {
  CHECK(ptadvise::to_string(EventKind::CpuOp) == "cpu_op");
  CHECK(ptadvise::to_string(EventKind::Kernel) == "kernel");
  CHECK(ptadvise::to_string(EventKind::Memcpy) == "gpu_memcpy");
  CHECK(ptadvise::to_string(EventKind::MemoryInstant) == "memory");
  CHECK(ptadvise::to_string(EventKind::Other) == "other");
}

TEST_CASE("devices without deviceProperties: the architecture from kernel names; ROCm's gfx is no CUDA cc") {
  using namespace ptadvise;
  testing::TraceBuilder nvidia(testing::Era::Kineto2023);
  nvidia.launch("volta_sgemm_128x64_nn", 0, 5, 10, 100);
  nvidia.launch("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32", 20, 5, 120, 100);
  Timeline inferred = nvidia.load();
  REQUIRE(inferred.devices.size() == 1);
  CHECK(inferred.devices[0].vendor == "NVIDIA");
  CHECK(inferred.devices[0].compute_major == 8);  // the newest architecture its kernels were built for
  CHECK(inferred.devices[0].compute_minor == 0);
  CHECK(inferred.devices[0].compute_inferred);

  testing::TraceBuilder amd(testing::Era::Kineto2023);
  amd.device(0, "AMD Instinct MI210", 9, 0, 64LL << 30);
  amd.launch("Cijk_Ailk_Bljk_HHS_BH_MT64x64x32_MI32x32x8x1_SN", 0, 5, 10, 100);
  Timeline rocm = amd.load();
  REQUIRE(rocm.devices.size() == 1);
  CHECK(rocm.devices[0].vendor == "AMD");
  CHECK(rocm.devices[0].compute_major == -1);  // computeMajor 9 is gfx90a, not a CUDA compute capability
  CHECK_FALSE(rocm.devices[0].compute_inferred);
}
