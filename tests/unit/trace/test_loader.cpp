// The loader on small inline traces of every era and quirk, and on bad input.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ptadvise/loader.h"
#include "gzip_bytes.h"
#include "trace_builder.h"

using ptadvise::EventIndex;
using ptadvise::EventKind;
using ptadvise::LoadError;
using ptadvise::Timeline;
using ptadvise::TrackKind;
using ptadvise::testing::Era;
using ptadvise::testing::TraceBuilder;

namespace {

std::string load_error(std::string_view bytes, const std::string& label = "trace.json") {
  auto result = ptadvise::load_trace_bytes(bytes, label);
  if (auto* error = std::get_if<LoadError>(&result)) return error->message;
  return "(loaded)";
}

Timeline load_ok(std::string_view bytes, const std::string& label = "trace.json") {
  auto result = ptadvise::load_trace_bytes(bytes, label);
  if (auto* error = std::get_if<LoadError>(&result)) {
    FAIL_CHECK("unexpected load error: " << error->message);
    return Timeline{};
  }
  return std::move(std::get<Timeline>(result));
}

EventIndex find(const Timeline& timeline, std::string_view name, size_t nth = 0) {
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) == name && nth-- == 0) return i;
  }
  FAIL_CHECK("no event named " << name);
  return 0;
}

std::string gzip(std::string_view text) { return ptadvise::testing::gzip_bytes(text); }

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("ptadvise_loader_" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" +
            std::to_string(std::rand()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string write(const std::string& name, std::string_view bytes) const {
    std::ofstream out(path / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return (path / name).string();
  }
};

// The standard little training step every era writes: a step annotation, an op launching a kernel.
TraceBuilder step_trace(Era era) {
  TraceBuilder trace(era);
  trace.annotation("ProfilerStep#3", 1000, 500);
  trace.cpu_op("aten::mm", 1010, 100, "\"External id\": 11");
  trace.launch("gemm_kernel", 1020, 30, 1060, 200);
  trace.memcpy("HtoD", "Pageable", "Device", 1300, 20, 4096, 1500);
  return trace;
}

}  // namespace

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

TEST_CASE("loader: malformed events are counted and skipped with one warning") {
  std::string text =
      "{\"traceEvents\": [\n"
      "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ok\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 2},\n"
      "  42,\n"
      "  {\"cat\": \"cpu_op\", \"name\": \"no phase\", \"ts\": 1, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"name\": \"bad ts\", \"ts\": {\"us\": 1}, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"name\": 7, \"ts\": 1, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"name\": \"no dur\", \"ts\": 1},\n"
      "  {\"ph\": \"X\", \"name\": \"huge ts\", \"ts\": 1e300, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ok too\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 2}\n"
      "]}\n";
  Timeline timeline = load_ok(text);
  REQUIRE(timeline.events.size() == 2);
  CHECK(timeline.name(1) == "ok too");
  CHECK(timeline.stats.events_seen == 8);
  CHECK(timeline.stats.malformed_events == 6);
  CHECK(timeline.stats.warnings ==
        std::vector<std::string>{"trace.json: skipped 6 malformed events (first at byte " +
                                 std::to_string(text.find("42")) + ": expected an object for an event)"});
}

TEST_CASE("loader: bad input gives one-line errors naming the file and the position") {
  CHECK(load_error("") == "trace.json: the file is empty");
  CHECK(load_error("  \n ") == "trace.json: the file is empty");
  CHECK(load_error("{\"a\": 1}") == "trace.json: no \"traceEvents\" list: this JSON is not a PyTorch profiler trace");
  CHECK(load_error("[1, 2]") ==
        "trace.json: byte 1: expected an object for an event (none of the 2 entries of the event list is a usable "
        "event: is this a PyTorch profiler trace?)");
  CHECK(load_error("rules:\n  - id: PTA101\n") ==
        "trace.json: byte 0: expected a JSON object or array (this does not look like a PyTorch profiler trace)");
  CHECK(load_error("{\"traceEvents\": {\"a\": 1}}") == "trace.json: byte 16: expected an array for \"traceEvents\"");
  CHECK(load_error("{\"traceEvents\": []}") == "trace.json: the trace has no events");
  CHECK(load_error("{\"schemaVersion\": 1 \"traceEvents\": []}") ==
        "trace.json: byte 20: expected ',' or '}' after the value of \"schemaVersion\"");
  CHECK(load_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": }]}") ==
        "trace.json: byte 17: invalid JSON (an unescaped quote or backslash?) in an event");
  CHECK(load_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"\xff\xfe\", \"ts\": 1, \"dur\": 1}]}") ==
        "trace.json: byte 17: invalid UTF-8 bytes in an event");
  CHECK(load_error("\x89PNG\r\n\x1a\n\0\0", "image.json") ==
        "image.json: byte 0: expected a JSON object or array (this does not look like a PyTorch profiler trace)");
  CHECK(load_error("{\"traceEvents\": [") == "trace.json: file ends before the first complete event");

  auto missing = ptadvise::load_trace_file("/nonexistent/dir/trace.json");
  REQUIRE(std::holds_alternative<LoadError>(missing));
  CHECK(std::get<LoadError>(missing).message == "/nonexistent/dir/trace.json: cannot open: No such file or directory");

  TempDir dir;
  dir.write("notes.txt", "not a trace");
  auto empty_dir = ptadvise::load_traces({dir.path.string()});
  REQUIRE(std::holds_alternative<LoadError>(empty_dir));
  CHECK(std::get<LoadError>(empty_dir).message ==
        dir.path.string() + ": no trace files (*.json, *.json.gz) in this directory");
  std::string empty_file = dir.write("empty.json", "");
  auto empty = ptadvise::load_trace_file(empty_file);
  REQUIRE(std::holds_alternative<LoadError>(empty));
  CHECK(std::get<LoadError>(empty).message == empty_file + ": the file is empty");
  auto directory = ptadvise::load_trace_file(dir.path.string());
  REQUIRE(std::holds_alternative<LoadError>(directory));
}

TEST_CASE("loader: non-UTF-8 bytes inside one event skip that event and keep the rest") {
  TraceBuilder trace;
  trace.cpu_op("before", 10, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf\xe9\", \"pid\": 1, \"tid\": 1, \"ts\": 11, "
                  "\"dur\": 1}");
  trace.cpu_op("after", 12, 1);
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 2);
  CHECK(timeline.name(0) == "before");
  CHECK(timeline.name(1) == "after");
  CHECK(timeline.stats.recovered_errors == 1);
  REQUIRE(timeline.stats.warnings.size() == 1);
  CHECK(timeline.stats.warnings[0].find("trace.json: byte ") == 0);
  CHECK(timeline.stats.warnings[0].find(": invalid UTF-8 bytes in an event; skipped ") != std::string::npos);
}

TEST_CASE("loader: a file cut inside an event keeps the events before the cut") {
  TraceBuilder trace;
  for (int i = 0; i < 10; ++i) trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
  std::string text = trace.json();
  size_t cut = text.find("\"op7\"");
  std::string truncated = text.substr(0, cut);
  size_t event_start = truncated.rfind('{');
  Timeline timeline = load_ok(truncated);
  CHECK(timeline.events.size() == 7);
  CHECK(timeline.name(6) == "op6");
  CHECK(timeline.stats.truncated_bytes == truncated.size() - event_start);
  CHECK(timeline.stats.warnings ==
        std::vector<std::string>{"trace.json: file ends inside an event at byte " + std::to_string(event_start) +
                                 "; kept 7 events, lost " + std::to_string(truncated.size() - event_start) +
                                 " bytes"});

  // Cut between events: nothing lost but the closing brackets.
  std::string between = text.substr(0, text.find("{\"ph\"", text.find("\"op8\"")));
  Timeline kept = load_ok(between);
  CHECK(kept.events.size() == 9);
  CHECK(kept.stats.truncated_bytes == 0);
  CHECK(kept.stats.warnings ==
        std::vector<std::string>{"trace.json: file ends inside the event list (no closing ']'); kept 9 events"});
}

TEST_CASE("loader: unescaped quotes and backslashes in names are skipped by resynchronising") {
  TraceBuilder trace;
  trace.cpu_op("first", 10, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"say \"hi\"\", \"pid\": 1, \"tid\": 1, \"ts\": 11, "
                  "\"dur\": 1}");
  trace.cpu_op("middle", 12, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"C:\\path\", \"pid\": 1, \"tid\": 1, \"ts\": 13, "
                  "\"dur\": 1}");
  trace.cpu_op("last", 14, 1);
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 3);
  CHECK(timeline.name(0) == "first");
  CHECK(timeline.name(1) == "middle");
  CHECK(timeline.name(2) == "last");
  CHECK(timeline.stats.recovered_errors == 2);
  CHECK(timeline.stats.malformed_events == 0);
  std::string text = trace.json();
  size_t quote_event = text.find("\n  {", text.find("\"first\"")) + 3;
  size_t middle_event = text.rfind("\n  {", text.find("\"middle\"")) + 3;
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0].find("; skipped that event (byte " + std::to_string(quote_event) + ", " +
                                        std::to_string(middle_event - quote_event) + " bytes) and resumed at byte " +
                                        std::to_string(middle_event)) != std::string::npos);
}

TEST_CASE("loader: gzip input, including multi-member streams, from bytes and from files") {
  TraceBuilder trace = step_trace(Era::Kineto2023);
  std::string text = trace.json();
  Timeline from_bytes = load_ok(gzip(text));
  CHECK(from_bytes.events.size() == 5);
  CHECK(from_bytes.stats.bytes == text.size());

  std::string members = gzip(text.substr(0, 100)) + gzip(text.substr(100));
  Timeline from_members = load_ok(members);
  CHECK(from_members.events.size() == 5);

  TempDir dir;
  std::string path = dir.write("trace.json.gz", members);
  auto from_file = ptadvise::load_trace_file(path);
  REQUIRE(std::holds_alternative<Timeline>(from_file));
  CHECK(std::get<Timeline>(from_file).events.size() == 5);
  CHECK(std::get<Timeline>(from_file).path == path);

  std::string corrupt = gzip(text);
  corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 0x55);
  corrupt.resize(corrupt.size() - 12);
  // Damaged in the middle: what inflates before the damage is used, with a warning (like a cut file).
  auto damaged = ptadvise::load_trace_bytes(corrupt, "trace.json");
  REQUIRE(std::holds_alternative<Timeline>(damaged));
  CHECK(std::get<Timeline>(damaged).stats.warnings.at(0).find(
            "trace.json: the gzip data is cut short or damaged after compressed byte ") == 0);
  // Nothing inflates at all: an error.
  CHECK(load_error(std::string("\x1f\x8b\x08\x00garbage garbage garbage")) ==
        "trace.json: corrupt gzip data at compressed byte 0");
}

TEST_CASE("loader: directories load one timeline per file, ranked by distributedInfo, file name, then order") {
  TempDir dir;
  TraceBuilder with_rank;
  with_rank.distributed(2, 4).cpu_op("a", 1, 1);
  dir.write("zzz.json", with_rank.json());
  TraceBuilder plain;
  plain.cpu_op("b", 1, 1);
  dir.write("trace_rank-1.json", plain.json());
  dir.write("trace_rank_0.json.gz", gzip(plain.json()));
  dir.write("worker.json", plain.json());  // no rank anywhere: its position in the sorted listing
  dir.write("README.md", "# not a trace");
  auto result = ptadvise::load_traces({dir.path.string()});
  REQUIRE(std::holds_alternative<std::vector<Timeline>>(result));
  const auto& timelines = std::get<std::vector<Timeline>>(result);
  REQUIRE(timelines.size() == 4);
  CHECK(timelines[0].rank == 0);
  CHECK(timelines[0].path == (dir.path / "trace_rank_0.json.gz").string());
  CHECK(timelines[1].rank == 1);
  CHECK(timelines[2].rank == 2);
  CHECK(timelines[2].path == (dir.path / "worker.json").string());
  CHECK(timelines[3].rank == 2);
  CHECK(timelines[3].path == (dir.path / "zzz.json").string());
}

TEST_CASE("loader: traces larger than one parse window, minified or with one huge event") {
  TraceBuilder trace;
  const int count = 60000;  // about 7.5 MB: two windows and more
  for (int i = 0; i < count; ++i) trace.cpu_op("op" + std::to_string(i % 100), i, 1, "\"External id\": " + std::to_string(i));
  std::string text = trace.json();
  REQUIRE(text.size() > (size_t{6} << 20));
  Timeline timeline = load_ok(text);
  REQUIRE(timeline.events.size() == count);
  CHECK(timeline.events.external_id[count - 1] == count - 1);
  CHECK(timeline.events.ts_ns[count - 1] == int64_t{count - 1} * 1000);
  CHECK(timeline.stats.warnings.empty());

  std::string minified;
  minified.reserve(text.size());
  for (char c : text) {
    if (c != '\n') minified += c;
  }
  Timeline from_minified = load_ok(minified);
  CHECK(from_minified.events.size() == count);
  CHECK(from_minified.stats.warnings.empty());

  std::string cut = text.substr(0, text.size() / 2);
  Timeline from_cut = load_ok(cut);
  CHECK(from_cut.stats.truncated_bytes > 0);
  CHECK(from_cut.stats.truncated_bytes < 300);
  CHECK(from_cut.events.size() > count / 2 - 200);

  TraceBuilder huge;
  huge.cpu_op("small", 1, 1);
  huge.cpu_op("big", 2, 1, "\"Call stack\": \"" + std::string(5 << 20, 'x') + "\"");
  huge.cpu_op("small again", 3, 1);
  Timeline from_huge = huge.load();
  REQUIRE(from_huge.events.size() == 3);
  CHECK(from_huge.arg_string(1, "Call stack")->size() == (size_t{5} << 20));
  CHECK(from_huge.stats.warnings.empty());
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
