// Loading traces: one file (.json or .json.gz) or a directory of per-rank traces.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "ptadvise/timeline.h"

namespace ptadvise {

// A fatal input problem: the caller prints `message` (one line, names file and position) and exits 2.
struct LoadError {
  std::string message;
};

struct LoadOptions {
  bool link = true;  // run the link pass (parents, launches) after parsing
  // Called by load_traces after each file: (files loaded, files in this path, uncompressed bytes of the
  // file), for progress displays.
  std::function<void(size_t, size_t, uint64_t)> on_file_loaded;
};

// Loads one trace file. Recoverable problems (truncation, malformed events) land in Timeline::stats.
std::variant<Timeline, LoadError> load_trace_file(const std::string& path, const LoadOptions& options = {});

// Loads from bytes already in memory (tests, fuzzing). `label` names the source in messages.
std::variant<Timeline, LoadError> load_trace_bytes(std::string_view bytes, const std::string& label,
                                                   const LoadOptions& options = {});

// A path may be a file or a directory of per-rank traces (*.json, *.json.gz). Ranks are taken from
// distributedInfo.rank, else from the file name (rank-N / rank_N / rankN), else from file order;
// the result is sorted by rank.
std::variant<std::vector<Timeline>, LoadError> load_traces(const std::vector<std::string>& paths,
                                                           const LoadOptions& options = {});

}  // namespace ptadvise
