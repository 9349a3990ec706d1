// Internal to trace/: the parser of one trace file. The top level (top_level.cpp) finds the event list;
// the event list (event_list.cpp) is read in windows of a few MiB, on every core (event_windows.h), and
// each window's events (event_parser.cpp) are merged into the timeline in file order (loader.cpp).
#pragma once

#include <simdjson.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "event_chunk.h"
#include "input.h"
#include "ptadvise/loader.h"

namespace ptadvise::detail {

class WindowPool;

// Calls `f` on each column the parser fills (parent and launch come later, from the link pass).
template <class F>
inline void for_each_parsed_column(Events& events, F&& f) {
  f(events.ts_ns);
  f(events.dur_ns);
  f(events.kind);
  f(events.name);
  f(events.category);
  f(events.track);
  f(events.correlation);
  f(events.external_id);
  f(events.args_offset);
  f(events.args_length);
}

class TraceParser {
 public:
  // `pending`: the part of the input not read yet (read_input_file's incremental reads), or nullptr.
  TraceParser(PaddedBuffer buffer, std::unique_ptr<PendingInput> pending, std::string label, unsigned threads);
  ~TraceParser();
  std::variant<Timeline, LoadError> run(const LoadOptions& options);

 private:
  // Top level.
  std::optional<std::string> parse_top_level();
  std::optional<std::string> parse_top_level_value(std::string_view key, size_t start, size_t end);
  // Event list; returns the position after its closing ']' or kNotFound when the list was cut short.
  size_t parse_event_list(size_t pos);
  size_t read_event_list(size_t pos);
  // Parses one event alone: the position after it, or the next event start after a syntax error.
  struct SingleResult {
    size_t pos = 0;
    bool at_event_start = false;  // resynchronised: pos is the start of an event
    bool stop = false;            // nothing more can be read
  };
  SingleResult parse_single_event(size_t start);
  // Events parsed on this thread go to single_; they are merged before the next window's.
  void flush_single();
  void merge(EventChunk chunk);
  void warn(std::string message) { timeline_.stats.warnings.push_back(label_ + ": " + std::move(message)); }
  std::string at(size_t offset) const { return label_ + ": byte " + std::to_string(offset) + ": "; }
  // Events far from the bulk of the trace's times are dropped as malformed; an error when the rest last
  // longer together than any run (numbers.h: kMaxDistanceNs, kMaxTotalDurationNs).
  std::optional<std::string> bound_times();
  void finish();
  void warn_unknown_categories();
  void report_bytes(size_t pos);
  // Incremental reads: bytes up to `end` (at least) are read; fill_all() reads the rest of the file, for
  // the scans that may run far (a broken event, the top level). skip_space_read() and value_end_read()
  // scan as skip_space() and skip_value() do, reading on when they reach the bytes not read yet.
  void fill(size_t end);
  void fill_all() { fill(size_); }
  size_t skip_space_read(size_t pos);
  size_t value_end_read(size_t pos);
  // With kept args, the pages of the buffer before `pos` are given back: nothing reads them again. While
  // the file is still being read they are kept aside and moved ahead (mremap) to take the next bytes read,
  // which saves the kernel freeing, zeroing and faulting in pages.
  void release_before(size_t pos);
  void recycle(size_t from, size_t to);  // moves spare pages to [from, to), page-aligned
  void drop_spare();

  PaddedBuffer buffer_;
  std::unique_ptr<PendingInput> pending_;
  std::unique_ptr<PendingInput> filled_input_;  // pending_ once every byte was filled: asked after the parse
  size_t filled_ = 0;    // bytes read so far (size_ unless pending_)
  size_t released_ = 0;  // bytes given back from the start of the buffer
  std::vector<std::pair<size_t, size_t>> spare_;  // released pages still resident, [begin, end)
  size_t recycled_end_ = 0;                        // end of the pages moved ahead so far
  std::vector<std::string> input_warnings_;  // the file shrank, or the gzip stream was cut, while read incrementally
  std::string input_failure_;                // PendingInput::failure: the load fails with it
  uint64_t unread_bytes_ = 0;                // PendingInput::unread_bytes
  size_t expected_size_ = 0;                 // what size_ is expected to end at (progress, reservations)
  std::string label_;
  unsigned threads_ = 1;
  char* data_ = nullptr;
  size_t size_ = 0;
  simdjson::ondemand::parser parser_;
  std::shared_ptr<const ArgKeySet> kept_keys_;  // LoadOptions::arg_keys
  std::unique_ptr<ArgKeyFilter> keep_;          // over kept_keys_; nullptr keeps every args object
  std::string kept_args_;                       // with kept keys: the timeline's args text (Timeline::buffer)
  ChunkParser single_;
  std::unique_ptr<WindowPool> windows_;
  Timeline timeline_;

  bool object_form_ = false;
  bool saw_event_list_ = false;
  bool any_category_ = false;
  bool list_cut_ = false;
  std::optional<int64_t> base_time_ns_;
  std::string first_malformed_;
  std::string first_syntax_error_;
  size_t syntax_warnings_ = 0;
  std::unordered_map<StringId, uint64_t> other_events_;  // events of kind Other, by category
  size_t repaired_events_ = 0;  // read after repair_text(): invalid UTF-8 or unpaired surrogates replaced
  size_t first_repaired_ = 0;
  const std::function<void(uint64_t, uint64_t)>* on_bytes_ = nullptr;  // LoadOptions::on_bytes_parsed
  size_t bytes_reported_ = 0;
  size_t extent_scan_budget_ = 0;  // set in run(): bytes the long event-extent scans may read in all

  // Merging: tracks by (pid text, tid text), names from metadata events.
  std::unordered_map<uint64_t, uint32_t> cpu_tracks_, gpu_tracks_;
  std::unordered_map<StringId, StringId> process_names_;
  std::unordered_map<uint64_t, StringId> thread_names_;
};

}  // namespace ptadvise::detail
