// Loading traces: one file (.json or .json.gz) or a directory of per-rank traces.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "ptadvise/timeline.h"

namespace ptadvise {

// A fatal input problem: the caller prints `message` (one line, names file and position) and exits 2.
struct LoadError {
  std::string message;
  // A JSON object without a "traceEvents" list: some other document (a config, metrics), not a broken
  // trace. Found in a directory, such a file is skipped with a warning; named on its own, it is an error.
  bool not_a_trace = false;
};

struct LoadOptions {
  bool link = true;  // run the link pass (parents, launches) after parsing
  // Threads that read one file's event list in parallel windows; 0 = one per core.
  unsigned threads = 0;
  // The args keys to keep (kept_arg_keys() in timeline.h: the code's keys plus the rules'); the others are
  // dropped while the events are read, so the file's bytes need not stay in memory. nullptr keeps every
  // args object as a view of the file's bytes, which then live as long as the timeline.
  std::shared_ptr<const ArgKeySet> arg_keys;
  // Called by load_traces after each file: (files loaded, files to load in all, uncompressed bytes of the
  // file), for progress displays.
  std::function<void(size_t, size_t, uint64_t)> on_file_loaded;
  // Called while the event list of a file is parsed, about once per MiB: (bytes parsed, bytes in the file
  // once uncompressed), for progress displays within a large file.
  std::function<void(uint64_t, uint64_t)> on_bytes_parsed;
  // Called by load_traces for a file of a directory that is another JSON document (LoadError::not_a_trace),
  // with that error's message; the file is then left out. Without it, such a file is an error like any.
  std::function<void(const std::string&)> on_not_a_trace;
};

// Loads one trace file ("-" reads stdin; pipes such as `<(zcat t.json.gz)` work too). Recoverable problems (truncation, malformed events) land in Timeline::stats.
std::variant<Timeline, LoadError> load_trace_file(const std::string& path, const LoadOptions& options = {});

// Loads from bytes already in memory (tests, fuzzing). `label` names the source in messages.
std::variant<Timeline, LoadError> load_trace_bytes(std::string_view bytes, const std::string& label,
                                                   const LoadOptions& options = {});

// The rank written in a trace's file name (rank-3, rank_3, rank3; case-insensitive), else nullopt.
std::optional<int> rank_from_file_name(const std::string& name);

// The trace files (regular files named *.json or *.json.gz) in `directory`, and below it when `recursive`
// (directories it may not read are skipped), sorted; `error` is set when it cannot be listed.
std::vector<std::string> trace_files_in(const std::string& directory, bool recursive, std::error_code& error);

// One file a command reads: a path the user named, or a trace file found below a directory the user named.
struct TraceInput {
  std::string path;
  size_t named = 0;           // which of the paths given it comes from
  bool in_directory = false;  // found in a directory, not named on its own
};

// The files of the paths a command was given, in order: a file stays as named ("-" too); a directory gives
// the trace files below it, recursively (TensorBoard writes logdir/<run>/<host>_<pid>.<time>.pt.trace.json),
// sorted. A directory that cannot be listed or holds no trace file is an error.
std::variant<std::vector<TraceInput>, LoadError> list_trace_inputs(const std::vector<std::string>& paths);

// Whether a file that failed to load is left out, with a warning, instead of failing the command: another
// JSON document (LoadError::not_a_trace: hparams, metrics) that was found in a run directory. A file named
// on its own, or a broken trace anywhere, is an error.
bool left_out_of_directory(const TraceInput& input, bool not_a_trace);

// The error when every file found was left out (left_out_of_directory): there is nothing to check.
LoadError no_trace_left(size_t left_out);

// Loads the files of list_trace_inputs(paths). Ranks are taken from distributedInfo.rank, else from the
// file name (rank-N / rank_N / rankN), else from the file's order in its directory; the result is sorted
// by rank. Files left out (left_out_of_directory) go to LoadOptions::on_not_a_trace, or fail without it.
std::variant<std::vector<Timeline>, LoadError> load_traces(const std::vector<std::string>& paths,
                                                           const LoadOptions& options = {});

// A trace is "partial" when more than `max_lost_share` of it could not be read: bytes of the event list
// skipped after syntax errors, or events skipped as malformed. Returns the one-line message saying how
// much was lost (naming the file), or nullopt. Commands fail on it unless the user accepts partial traces
// (--accept-partial): findings on a tenth of a trace are not a clean result.
inline constexpr double kMaxLostShare = 0.05;
std::optional<std::string> partial_trace_problem(const Timeline& timeline, double max_lost_share = kMaxLostShare);

}  // namespace ptadvise
