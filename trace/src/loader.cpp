// Loading Kineto / PyTorch-profiler JSON into a Timeline: one file, bytes in memory, or a directory of
// per-rank traces. The parse itself is in trace_parser.h; this file merges what it reads, finishes the
// timeline (origin, track names, format, warnings) and links it.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptadvise/bad_alloc_shield.h"
#include "event_windows.h"
#include "links.h"
#include "numbers.h"
#include "ptadvise/cores.h"
#include "trace_parser.h"

namespace ptadvise {
namespace detail {

TraceParser::TraceParser(PaddedBuffer buffer, std::unique_ptr<PendingInput> pending, std::string label,
                         unsigned threads)
    : buffer_(std::move(buffer)), pending_(std::move(pending)), label_(std::move(label)),
      threads_(std::max(1u, threads)) {
  data_ = buffer_.data;
  size_ = buffer_.size;
  filled_ = pending_ ? pending_->filled() : size_;
  expected_size_ = pending_ ? pending_->expected_size() : size_;
}

namespace {

size_t page_size() {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

void TraceParser::fill(size_t end) {
  if (!pending_ || end <= filled_) return;
  const size_t target = std::min(size_, std::max(end, filled_ + kPendingRead));
  const size_t page = page_size();
  recycle((filled_ + page - 1) / page * page, target / page * page);
  if (auto problem = pending_->fill(data_, target, recycled_end_)) input_warnings_.push_back(label_ + ": " + *problem);
  if (input_failure_.empty()) input_failure_ = pending_->failure();
  // The input ended before size_ (a file that shrank, the end of a gzip stream): pages moved ahead hold old
  // bytes, and past the new end they must read as the zeros of the padding.
  if (recycled_end_ > pending_->size()) std::memset(data_ + pending_->size(), 0, recycled_end_ - pending_->size());
  filled_ = pending_->filled();
  size_ = pending_->size();
  expected_size_ = pending_->expected_size();
  if (filled_ >= size_) {
    unread_bytes_ = pending_->unread_bytes();
    filled_input_ = std::move(pending_);
    drop_spare();
  }
}

void TraceParser::recycle(size_t from, size_t to) {
  while (from < to && !spare_.empty()) {
    auto& [begin, end] = spare_.front();
    const size_t length = std::min(end - begin, to - from);
    // MREMAP_DONTUNMAP leaves the source mapped (without pages): the buffer stays one reservation at every
    // moment. Moving the pages and mapping the hole again after was two calls, and between them another
    // thread's mmap (a window's copy, the allocator's) could be placed in the hole, then be overwritten by
    // the second call and unmapped with the buffer (a SIGSEGV in AddressSanitizer's allocator showed it).
    // A kernel without the flag (before Linux 5.7) refuses it: the pages are then given back instead.
    if (mremap(data_ + begin, length, length, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, data_ + from) ==
        MAP_FAILED) {
      drop_spare();
      return;
    }
    begin += length;
    from += length;
    recycled_end_ = std::max(recycled_end_, from);
    if (begin == end) spare_.erase(spare_.begin());
  }
}

void TraceParser::drop_spare() {
  for (const auto& [begin, end] : spare_) (void)madvise(data_ + begin, end - begin, MADV_DONTNEED);
  spare_.clear();
}

size_t TraceParser::skip_space_read(size_t pos) {
  pos = skip_space(data_, size_, pos);
  while (pos >= filled_ && pending_) {  // the bytes not read yet are zeros: no white space
    fill(pos + 1);
    pos = skip_space(data_, size_, pos);
  }
  return pos;
}

size_t TraceParser::value_end_read(size_t pos) {
  size_t end = skip_value(data_, filled_, pos);
  if ((end == kNotFound || end >= filled_) && pending_) {  // reached the bytes not read yet
    fill_all();
    end = skip_value(data_, size_, pos);
  }
  return end;
}

void TraceParser::release_before(size_t pos) {
  if (!keep_) return;  // the args views need the file's bytes
  const size_t page = page_size();
  // A page of margin: the window before `pos` patched the byte before its start.
  const size_t end = pos / page * page;
  if (end < released_ + kReleaseStep + page) return;
  if (pending_ && pending_->recycles()) {
    spare_.emplace_back(released_, end - page);
  } else {
    (void)madvise(data_ + released_, end - page - released_, MADV_DONTNEED);
  }
  released_ = end - page;
}

TraceParser::~TraceParser() = default;

void TraceParser::flush_single() {
  if (!single_.chunk().empty()) merge(single_.take());
}

// Appends a chunk's events with its string and track ids made the timeline's. Strings are interned and
// tracks created in the chunk's order of first use, so ids come out as if the file had been read in one pass.
void TraceParser::merge(EventChunk chunk) {
  LoadStats& stats = timeline_.stats;
  stats.events_seen += chunk.events_seen;
  stats.malformed_events += chunk.malformed_events;
  stats.negative_durations += chunk.negative_durations;
  stats.unknown_phases += chunk.unknown_phases;
  stats.begin_end_events += chunk.begin_end_events;
  any_category_ = any_category_ || chunk.any_category;
  if (first_malformed_.empty()) first_malformed_ = std::move(chunk.first_malformed);

  std::vector<StringId> strings(chunk.strings.size());
  for (uint32_t s = 0; s < chunk.strings.size(); ++s) strings[s] = timeline_.strings.intern(chunk.strings.view(s));
  for (const auto& [category, count] : chunk.other_events) other_events_[strings[category]] += count;
  for (const EventChunk::Name& name : chunk.names) {
    if (name.thread) {
      thread_names_[(uint64_t{strings[name.pid]} << 32) | strings[name.tid]] = strings[name.name];
    } else {
      process_names_[strings[name.pid]] = strings[name.name];
    }
  }
  std::vector<uint32_t> tracks(chunk.tracks.size());
  for (uint32_t t = 0; t < chunk.tracks.size(); ++t) {
    Track track = chunk.tracks[t];
    track.pid_text = strings[track.pid_text];
    track.tid_text = strings[track.tid_text];
    auto& known = track.kind == TrackKind::Gpu ? gpu_tracks_ : cpu_tracks_;
    auto [it, inserted] = known.try_emplace((uint64_t{track.pid_text} << 32) | track.tid_text,
                                            static_cast<uint32_t>(timeline_.tracks.size()));
    if (inserted) timeline_.tracks.push_back(track);
    tracks[t] = it->second;
  }
  timeline_.flow_correlation.insert(timeline_.flow_correlation.end(), chunk.flow_correlation.begin(),
                                    chunk.flow_correlation.end());

  Events& events = timeline_.events;
  size_t count = chunk.size();
  if (events.size() + count >= kNone - 1) {  // more events than a timeline can hold: the rest is malformed
    const size_t room = kNone - 2 - events.size();
    stats.malformed_events += count - room;
    if (first_malformed_.empty()) first_malformed_ = "more events than a timeline can hold";
    count = room;
  }
  events.ts_ns.insert(events.ts_ns.end(), chunk.ts_ns.begin(), chunk.ts_ns.begin() + count);
  events.dur_ns.insert(events.dur_ns.end(), chunk.dur_ns.begin(), chunk.dur_ns.begin() + count);
  events.kind.insert(events.kind.end(), chunk.kind.begin(), chunk.kind.begin() + count);
  events.correlation.insert(events.correlation.end(), chunk.correlation.begin(), chunk.correlation.begin() + count);
  events.external_id.insert(events.external_id.end(), chunk.external_id.begin(), chunk.external_id.begin() + count);
  if (keep_) {
    // Kept args: the chunk's text goes after the timeline's, its offsets with it.
    const uint64_t base = kept_args_.size();
    for (size_t e = 0; e < count; ++e) events.args_offset.push_back(chunk.args_offset[e] + base);
    kept_args_ += chunk.args_text;
  } else {
    events.args_offset.insert(events.args_offset.end(), chunk.args_offset.begin(), chunk.args_offset.begin() + count);
  }
  events.args_length.insert(events.args_length.end(), chunk.args_length.begin(), chunk.args_length.begin() + count);
  for (size_t e = 0; e < count; ++e) {
    events.name.push_back(strings[chunk.name[e]]);
    events.category.push_back(strings[chunk.category[e]]);
    events.track.push_back(tracks[chunk.track[e]]);
  }
}

void TraceParser::finish() {
  Events& events = timeline_.events;
  int64_t min_ts = 0, max_ts = 0;
  if (events.size() > 0) {
    auto [low, high] = std::minmax_element(events.ts_ns.begin(), events.ts_ns.end());
    min_ts = *low;
    max_ts = *high;
  }
  for (auto& ts : events.ts_ns) ts -= min_ts;
  timeline_.file_origin_ns = min_ts;
  int64_t base = base_time_ns_.value_or(0);
  // origin_ns + ts_ns must hold for every event, not only the first (times are within +-2^61 ns).
  if (__builtin_add_overflow(base, min_ts, &timeline_.origin_ns) ||
      timeline_.origin_ns > INT64_MAX - (max_ts - min_ts)) {
    warn("baseTimeNanoseconds " + std::to_string(base) + " is out of range; timestamps kept relative");
    timeline_.origin_ns = min_ts;
  }
  for (Track& track : timeline_.tracks) {
    auto thread = thread_names_.find((uint64_t{track.pid_text} << 32) | track.tid_text);
    if (thread != thread_names_.end()) {
      track.name = thread->second;
    } else if (auto process = process_names_.find(track.pid_text); process != process_names_.end()) {
      track.name = process->second;
    }
  }
  if (object_form_) {
    timeline_.format = "kineto";
  } else {
    timeline_.format = any_category_ ? "kineto-array" : "legacy";
  }
  LoadStats& stats = timeline_.stats;
  if (stats.malformed_events > 0) {
    warn("skipped " + with_commas(stats.malformed_events) + " malformed event" +
         (stats.malformed_events == 1 ? "" : "s") + " (first at " + first_malformed_ + ")");
  }
  if (stats.negative_durations > 0) {
    warn("clamped " + with_commas(stats.negative_durations) + " negative duration" +
         (stats.negative_durations == 1 ? "" : "s") + " to 0");
  }
  warn_unknown_categories();
  if (stats.begin_end_events > 0) {
    warn("ignored " + with_commas(stats.begin_end_events) + " begin/end (\"ph\": \"B\"/\"E\") event" +
         (stats.begin_end_events == 1 ? "" : "s") +
         ": ptadvise reads complete (\"X\") events, as the PyTorch profiler writes them; their time is not "
         "in the results");
  }
  if (repaired_events_ > 0) {
    warn("read " + with_commas(repaired_events_) + " event" + (repaired_events_ == 1 ? "" : "s") +
         " with invalid UTF-8 bytes or unpaired surrogate escapes replaced by '?' or U+FFFD (first at byte " +
         std::to_string(first_repaired_) + ")");
  }
}

std::variant<Timeline, LoadError> TraceParser::run(const LoadOptions& options) {
  timeline_.path = label_;
  timeline_.stats.bytes = size_;
  extent_scan_budget_ = 4 * expected_size_ + (size_t{1} << 20);
  const size_t estimate = expected_size_ / 300 + 16;
  Events& events = timeline_.events;
  for_each_parsed_column(events, [estimate](auto& column) { column.reserve(estimate); });

  on_bytes_ = &options.on_bytes_parsed;
  fill(kFirstRead);  // the top-level keys before the events are read from the first read
  if (options.arg_keys) {
    kept_keys_ = options.arg_keys;
    keep_ = std::make_unique<ArgKeyFilter>(*kept_keys_);
    // Room for the kept args of most traces (a tenth to a fifth of the text), so that the text is not
    // copied to a buffer twice its size as it grows (both resident at once). Pages never written cost no
    // memory; where the address space is short, the text grows as it would have.
    try {
      kept_args_.reserve(expected_size_ / 4);
    } catch (const std::bad_alloc&) {
    }
    single_.set_arg_keys(keep_.get());
  }
  auto top_level_error = parse_top_level();
  if (filled_input_) {
    if (auto problem = filled_input_->after_parse()) input_warnings_.push_back(label_ + ": " + *problem);
    filled_input_.reset();
  }
  // A file that shrank while it was read incrementally: said first, as when it is read whole.
  timeline_.stats.warnings.insert(timeline_.stats.warnings.begin(), input_warnings_.begin(), input_warnings_.end());
  timeline_.stats.bytes = size_;
  timeline_.stats.unread_bytes = unread_bytes_;
  if (!input_failure_.empty()) return LoadError{label_ + ": " + input_failure_};
  if (top_level_error) return LoadError{*top_level_error};
  report_bytes(size_);
  const LoadStats& stats = timeline_.stats;
  if (object_form_ && !saw_event_list_) {
    return LoadError{label_ + ": no \"traceEvents\" list: this JSON is not a PyTorch profiler trace", true};
  }
  if (stats.events_seen == 0) {
    if (!first_syntax_error_.empty()) return LoadError{label_ + ": " + first_syntax_error_};
    if (list_cut_) return LoadError{label_ + ": file ends before the first complete event"};
    return LoadError{label_ + ": the trace has no events"};
  }
  auto none_usable = [&] {
    return LoadError{label_ + ": " + first_malformed_ + " (none of the " + with_commas(stats.events_seen) +
                     " entries of the event list is a usable event: is this a PyTorch profiler trace?)"};
  };
  if (events.size() == 0 && stats.malformed_events == stats.events_seen) return none_usable();
  if (auto problem = bound_times()) return LoadError{*problem};
  if (events.size() == 0) return none_usable();  // every event far from the others
  finish();

  if (keep_) {
    // The kept args are all the timeline needs of the bytes: the file's buffer goes with the parser.
    const size_t size = kept_args_.size();
    kept_args_.append(PaddedBuffer::kPadding, '\0');  // simdjson reads up to this far past the last object
    auto text = std::make_shared<std::string>(std::move(kept_args_));
    timeline_.buffer = text->data();
    timeline_.buffer_size = size;
    timeline_.buffer_owner = std::shared_ptr<const void>(text, text->data());
    timeline_.kept_arg_keys = kept_keys_;
  } else {
    timeline_.buffer_owner = std::shared_ptr<const void>(buffer_.owner, buffer_.data);
    timeline_.buffer = buffer_.data;
    timeline_.buffer_size = size_;
  }
  if (options.link) {
    link_timeline(timeline_, threads_);
    infer_devices(timeline_);
  }
  return std::move(timeline_);
}

}  // namespace detail

namespace {

// Unless told: the cores this process may run on (taskset and cgroup cpusets narrow them), not the machine's.
unsigned load_threads(const LoadOptions& options) { return options.threads != 0 ? options.threads : usable_cores(); }

std::variant<Timeline, LoadError> load_from(detail::InputResult input, const std::string& label,
                                           const LoadOptions& options) {
  if (!input.ok()) return LoadError{label + ": " + input.error};
  detail::TraceParser parser(std::move(input.buffer), std::move(input.pending), label, load_threads(options));
  auto result = parser.run(options);
  if (auto* timeline = std::get_if<Timeline>(&result)) {
    std::vector<std::string> first;
    for (const auto& warning : input.warnings) first.push_back(label + ": " + warning);
    timeline->stats.warnings.insert(timeline->stats.warnings.begin(), first.begin(), first.end());
    timeline->stats.unread_bytes += input.unread_bytes;
  }
  return result;
}

bool is_trace_file_name(const std::string& name) {
  auto ends_with = [&name](std::string_view suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".json") || ends_with(".json.gz");
}

}  // namespace

std::vector<std::string> trace_files_in(const std::string& directory, bool recursive, std::error_code& error) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  auto take = [&](const fs::directory_entry& entry) {
    std::error_code type_error;
    if (entry.is_regular_file(type_error) && is_trace_file_name(entry.path().filename().string())) {
      files.push_back(entry.path().string());
    }
  };
  // increment(error_code&) is noexcept and allocates: a failed allocation there would end the process.
  without_bad_alloc_inside([&] {
    if (recursive) {
      for (fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, error), end;
           !error && it != end; it.increment(error)) {
        take(*it);
      }
    } else {
      for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) take(*it);
    }
  });
  if (error) return {};
  std::sort(files.begin(), files.end());
  return files;
}

// rank-3, rank_3, rank3 (case-insensitive) in a file name.
std::optional<int> rank_from_file_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (size_t at = lower.find("rank"); at != std::string::npos; at = lower.find("rank", at + 1)) {
    size_t i = at + 4;
    if (i < lower.size() && (lower[i] == '-' || lower[i] == '_')) ++i;
    size_t digits = i;
    int64_t value = 0;
    while (i < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i])) && value < 100000000) {
      value = value * 10 + (lower[i] - '0');
      ++i;
    }
    if (i > digits) return static_cast<int>(value);
  }
  return std::nullopt;
}

std::variant<Timeline, LoadError> load_trace_file(const std::string& path, const LoadOptions& options) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return LoadError{path + ": is a directory (pass it to load_traces, or name one trace file)"};
  }
  // With kept args the file's bytes are not needed after their window is parsed: read them as it goes on.
  return load_from(detail::read_input_file(path, options.arg_keys != nullptr), path == "-" ? "<stdin>" : path,
                   options);
}

std::variant<Timeline, LoadError> load_trace_bytes(std::string_view bytes, const std::string& label,
                                                   const LoadOptions& options) {
  return load_from(detail::copy_input_bytes(bytes), label, options);
}

std::variant<std::vector<TraceInput>, LoadError> list_trace_inputs(const std::vector<std::string>& paths) {
  std::vector<TraceInput> inputs;
  for (size_t named = 0; named < paths.size(); ++named) {
    const std::string& path = paths[named];
    std::error_code error;
    if (!std::filesystem::is_directory(path, error)) {
      inputs.push_back({path, named, false});
      continue;
    }
    std::vector<std::string> files = trace_files_in(path, true, error);
    if (error) return LoadError{path + ": cannot list the directory: " + error.message()};
    if (files.empty()) return LoadError{path + ": no trace files (*.json, *.json.gz) in this directory or below"};
    for (std::string& file : files) inputs.push_back({std::move(file), named, true});
  }
  return inputs;
}

bool left_out_of_directory(const TraceInput& input, bool not_a_trace) { return not_a_trace && input.in_directory; }

LoadError no_trace_left(size_t left_out) {
  return LoadError{"no PyTorch profiler trace among the " + std::to_string(left_out) +
                   (left_out == 1 ? " JSON file" : " JSON files") + " found"};
}

std::variant<std::vector<Timeline>, LoadError> load_traces(const std::vector<std::string>& paths,
                                                           const LoadOptions& options) {
  auto listed = list_trace_inputs(paths);
  if (auto* failure = std::get_if<LoadError>(&listed)) return std::move(*failure);
  const std::vector<TraceInput>& inputs = std::get<std::vector<TraceInput>>(listed);
  std::vector<Timeline> timelines;
  timelines.reserve(inputs.size());
  std::vector<int> loaded_from(paths.size(), 0);  // per path given: its files loaded so far, the fallback rank
  size_t left_out = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TraceInput& input = inputs[i];
    auto result = load_trace_file(input.path, options);
    if (auto* failure = std::get_if<LoadError>(&result)) {
      if (options.on_not_a_trace && left_out_of_directory(input, failure->not_a_trace)) {
        options.on_not_a_trace(failure->message);
        ++left_out;
        continue;
      }
      return std::move(*failure);
    }
    Timeline timeline = std::move(std::get<Timeline>(result));
    if (!timeline.rank) timeline.rank = rank_from_file_name(std::filesystem::path(input.path).filename().string());
    if (!timeline.rank && input.in_directory) timeline.rank = loaded_from[input.named];
    ++loaded_from[input.named];
    timelines.push_back(std::move(timeline));
    if (options.on_file_loaded) options.on_file_loaded(i + 1, inputs.size(), timelines.back().stats.bytes);
  }
  if (timelines.empty()) return no_trace_left(left_out);
  std::stable_sort(timelines.begin(), timelines.end(), [](const Timeline& a, const Timeline& b) {
    return a.rank.value_or(INT32_MAX) < b.rank.value_or(INT32_MAX);
  });
  return timelines;
}

}  // namespace ptadvise
