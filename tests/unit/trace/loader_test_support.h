// Helpers shared by the loader's test files (test_loader*.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <variant>

#include "gzip_bytes.h"
#include "ptadvise/loader.h"
#include "trace_builder.h"

namespace loader_test {

using ptadvise::EventIndex;
using ptadvise::EventKind;
using ptadvise::LoadError;
using ptadvise::Timeline;
using ptadvise::TrackKind;
using ptadvise::testing::Era;
using ptadvise::testing::TraceBuilder;

inline std::string load_error(std::string_view bytes, const std::string& label = "trace.json") {
  auto result = ptadvise::load_trace_bytes(bytes, label);
  if (auto* error = std::get_if<LoadError>(&result)) return error->message;
  return "(loaded)";
}

inline Timeline load_ok(std::string_view bytes, const std::string& label = "trace.json") {
  auto result = ptadvise::load_trace_bytes(bytes, label);
  if (auto* error = std::get_if<LoadError>(&result)) {
    FAIL_CHECK("unexpected load error: " << error->message);
    return Timeline{};
  }
  return std::move(std::get<Timeline>(result));
}

inline EventIndex find(const Timeline& timeline, std::string_view name, size_t nth = 0) {
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) == name && nth-- == 0) return i;
  }
  FAIL_CHECK("no event named " << name);
  return 0;
}

inline std::string gzip(std::string_view text) { return ptadvise::testing::gzip_bytes(text); }

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

// n CPU ops named op0..op{n-1}; the event named op{bad} gets `bad_name` as its raw (unescaped) name.
inline std::string ops_trace(int n, int bad, const std::string& bad_name) {
  TraceBuilder trace;
  for (int i = 0; i < n; ++i) {
    if (i == bad) {
      trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + bad_name +
                      "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(10 * i) + ", \"dur\": 5}");
    } else {
      trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
    }
  }
  return trace.json();
}

// The standard little training step every era writes: a step annotation, an op launching a kernel.
inline TraceBuilder step_trace(Era era) {
  TraceBuilder trace(era);
  trace.annotation("ProfilerStep#3", 1000, 500);
  trace.cpu_op("aten::mm", 1010, 100, "\"External id\": 11");
  trace.launch("gemm_kernel", 1020, 30, 1060, 200);
  trace.memcpy("HtoD", "Pageable", "Device", 1300, 20, 4096, 1500);
  return trace;
}

}  // namespace loader_test
