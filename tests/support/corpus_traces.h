// The real traces of ../shared/traces for the tests that read them. Each test says when it skips: the
// traces live beside the project and may be absent.
//
//   auto traces = ptadvise::testing::corpus_traces();
//   if (!traces) return;
//   auto timeline = ptadvise::testing::load_corpus_trace(*traces, "kineto__....json.gz");
//   if (!timeline) return;  // or continue, in a loop over traces
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "ptadvise/loader.h"
#include "ptadvise/timeline.h"

namespace ptadvise::testing {

// Whether this is the sanitizer build. Its corpus-wide loops that repeat the plain build's verdict on
// numbers read only the traces of up to 1 MiB on disk (sanitized_run_reads): the larger ones took minutes
// there and reach no other code (the plain build reads them all).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

inline bool sanitized_run_reads(const std::filesystem::path& trace) {
  std::error_code error;
  return !kSanitizerBuild || std::filesystem::file_size(trace, error) <= (uintmax_t{1} << 20);
}

// The corpus traces (.json, .json.gz) of at most `largest` bytes on disk that this build reads
// (sanitized_run_reads), in name order; empty when the corpus is absent.
inline std::vector<std::filesystem::path> corpus_trace_files(uintmax_t largest = UINTMAX_MAX) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PTADVISE_SHARED_DIR) + "/traces", error)) {
    const std::string name = entry.path().filename().string();
    const bool is_trace = name.ends_with(".json") || name.ends_with(".json.gz");
    if (is_trace && entry.file_size(error) <= largest && sanitized_run_reads(entry.path())) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The corpus directory with a trailing slash, for tests that name the traces in it.
inline std::string corpus_dir() { return std::string(PTADVISE_SHARED_DIR) + "/traces/"; }

// The corpus directory, or nullopt (said as a skip) when it is absent.
inline std::optional<std::filesystem::path> corpus_traces() {
  const std::filesystem::path traces = std::filesystem::path(PTADVISE_SHARED_DIR) / "traces";
  if (std::filesystem::is_directory(traces)) return traces;
  MESSAGE("skipped: " << traces.string() << " is absent (the shared traces live beside the project)");
  return std::nullopt;
}

// The path of one corpus trace, or nullopt (said as a skip) when it is absent.
inline std::optional<std::string> corpus_trace_path(const std::string& file) {
  const std::filesystem::path path = std::filesystem::path(PTADVISE_SHARED_DIR) / "traces" / file;
  if (std::filesystem::exists(path)) return path.string();
  MESSAGE("skipped: " << path.string() << " is absent (the shared traces live beside the project)");
  return std::nullopt;
}

// One corpus trace, loaded; nullopt (said as a skip) when the file is absent. A trace that does not load
// fails the test.
inline std::optional<Timeline> load_corpus_trace(const std::filesystem::path& traces, const std::string& file) {
  const std::filesystem::path path = traces / file;
  if (!std::filesystem::exists(path)) {
    MESSAGE("skipped: " << path.string() << " is absent");
    return std::nullopt;
  }
  auto loaded = load_trace_file(path.string());
  REQUIRE(std::holds_alternative<Timeline>(loaded));
  return std::get<Timeline>(std::move(loaded));
}

}  // namespace ptadvise::testing
