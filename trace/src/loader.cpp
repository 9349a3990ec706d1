// Loading Kineto / PyTorch-profiler JSON into a Timeline.
//
// The event list is parsed in windows of a few MiB with simdjson On-Demand: each window starts at an
// event and ends at a line break (which valid JSON never has inside a string), the byte before the
// window's first event is patched to '[' so the window is an array document, and every event is read in
// one pass over its fields. Parsing in windows keeps simdjson's index (4 bytes per input byte) small,
// so peak memory stays near the size of the JSON itself, and it makes recovery local: a window that
// fails is re-read event by event, a broken event is skipped by resynchronising at the next event, and
// a file cut short keeps everything before the cut.
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "input.h"
#include "json_scan.h"
#include "links.h"
#include "numbers.h"
#include "ptadvise/loader.h"

namespace ptadvise {
namespace {

namespace ondemand = simdjson::ondemand;
using detail::kNotFound;

#ifdef PTADVISE_LOADER_SMALL_WINDOWS
constexpr size_t kWindowBytes = 2048;  // fuzzing builds: window boundaries fall inside small inputs
#else
constexpr size_t kWindowBytes = size_t{4} << 20;
#endif
constexpr size_t kMaxEventBytes = size_t{256} << 20;  // one event larger than this is skipped
constexpr size_t kMaxWarningsPerKind = 3;

std::string with_commas(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string describe(simdjson::error_code error) {
  switch (error) {
    case simdjson::UTF8_ERROR:
      return "invalid UTF-8 bytes";
    case simdjson::UNCLOSED_STRING:
      return "a string is not terminated (an unescaped quote?)";
    case simdjson::STRING_ERROR:
      return "invalid escape in a string";
    case simdjson::UNESCAPED_CHARS:
      return "control character inside a string";
    case simdjson::DEPTH_ERROR:
      return "nesting too deep";
    case simdjson::INCORRECT_TYPE:
      return "wrong type";
    case simdjson::NUMBER_ERROR:
      return "invalid number";
    default:
      return "invalid JSON (an unescaped quote or backslash?)";
  }
}

// Fast key test on the raw (escaped) key text, which is followed by its closing quote.
template <size_t N>
bool key_is(const char* raw_key, const char (&expected)[N]) {
  return std::memcmp(raw_key, expected, N - 1) == 0 && raw_key[N - 1] == '"';
}

EventKind kind_of_category(std::string_view category) {
  static const std::unordered_map<std::string_view, EventKind> kinds{
      {"", EventKind::CpuOp},
      {"cpu_op", EventKind::CpuOp},
      {"Operator", EventKind::CpuOp},
      {"user_annotation", EventKind::UserAnnotation},
      {"python_function", EventKind::PythonFunction},
      {"cuda_runtime", EventKind::Runtime},
      {"Runtime", EventKind::Runtime},
      {"cuda_driver", EventKind::Driver},
      {"kernel", EventKind::Kernel},
      {"Kernel", EventKind::Kernel},
      {"gpu_memcpy", EventKind::Memcpy},
      {"Memcpy", EventKind::Memcpy},
      {"gpu_memset", EventKind::Memset},
      {"Memset", EventKind::Memset},
      {"cuda_sync", EventKind::Sync},
      {"gpu_user_annotation", EventKind::GpuAnnotation},
      {"collective_comm", EventKind::Collective},
  };
  auto it = kinds.find(category);
  return it == kinds.end() ? EventKind::Other : it->second;
}

bool is_cpu_gpu_flow(std::string_view category) {
  return category == "ac2g" || category == "async_cpu_to_gpu" || category == "async";
}

// What one event's fields said, before it is stored.
struct EventFields {
  char phase = 0;
  bool phase_ok = false;
  bool has_ts = false, has_dur = false, has_name = false;
  bool bad_ts = false, bad_dur = false, bad_name = false, bad_phase = false;
  int64_t ts_ns = 0, dur_ns = 0;
  StringId name = 0;
  StringId category = 0;
  bool has_category = false;
  std::string_view pid_token, tid_token;  // raw tokens (numbers or quoted strings)
  std::string_view args_name;             // args.name, for metadata events
  uint64_t args_offset = 0;
  uint32_t args_length = 0;
  int64_t correlation = -1, external_id = -1, device = -1, stream = -1, flow_id = -1;
};

enum class EventStatus { Stored, Skipped, Malformed, Fatal };

class TraceParser {
 public:
  TraceParser(detail::PaddedBuffer buffer, std::string label) : buffer_(std::move(buffer)), label_(std::move(label)) {
    data_ = buffer_.data;
    size_ = buffer_.size;
  }

  std::variant<Timeline, LoadError> run(const LoadOptions& options);

 private:
  // Top level.
  std::optional<std::string> parse_top_level();
  std::optional<std::string> parse_top_level_value(std::string_view key, size_t start, size_t end);
  // Event list; returns the position after its closing ']' or kNotFound when the list was cut short.
  size_t parse_event_list(size_t pos);
  size_t window_limit(size_t start) const;
  // Parses one event alone: the position after it, or the next event start after a syntax error.
  struct SingleResult {
    size_t pos = 0;
    bool at_event_start = false;  // resynchronised: pos is the start of an event
    bool stop = false;            // nothing more can be read
  };
  SingleResult parse_single_event(size_t start);
  EventStatus parse_event(ondemand::object& object, ondemand::document& doc, size_t start);
  bool read_args(ondemand::value& value, ondemand::document& doc, EventFields& fields);
  EventStatus store(EventFields& fields, size_t start);
  uint32_t track_for(const EventFields& fields, EventKind kind);
  StringId intern(std::string_view text);
  void note_malformed(size_t offset, const std::string& reason);
  void warn(std::string message) { timeline_.stats.warnings.push_back(label_ + ": " + std::move(message)); }
  std::string at(size_t offset) const { return label_ + ": byte " + std::to_string(offset) + ": "; }
  void finish();

  detail::PaddedBuffer buffer_;
  std::string label_;
  char* data_ = nullptr;
  size_t size_ = 0;
  ondemand::parser parser_;
  Timeline timeline_;

  bool object_form_ = false;
  bool saw_event_list_ = false;
  bool any_category_ = false;
  bool list_cut_ = false;
  std::optional<int64_t> base_time_ns_;
  std::string first_malformed_;
  std::string first_syntax_error_;
  size_t syntax_warnings_ = 0;
  const std::function<void(uint64_t, uint64_t)>* on_bytes_ = nullptr;  // LoadOptions::on_bytes_parsed
  size_t bytes_reported_ = 0;
  void report_bytes(size_t pos) {
    constexpr size_t kEvery = size_t{1} << 20;  // a call per MiB at most: the display refreshes 4 times a second
    if (on_bytes_ && *on_bytes_ && (pos >= bytes_reported_ + kEvery || pos == size_)) {
      bytes_reported_ = pos;
      (*on_bytes_)(pos, size_);
    }
  }
  size_t extent_scan_budget_ = 0;  // set in run(): bytes the long event-extent scans may read in all

  // Direct-mapped cache in front of the string pool: names repeat, and a cheap hash of length and end
  // bytes plus one comparison is faster than hashing every byte of a long kernel name.
  struct CachedString {
    const char* text = nullptr;
    size_t length = 0;
    StringId id = 0;
  };
  std::vector<CachedString> intern_cache_ = std::vector<CachedString>(4096);
  std::vector<uint8_t> category_kind_;  // per StringId of a category: EventKind + 1, 0 = not yet known
  std::unordered_map<uint64_t, uint32_t> cpu_tracks_, gpu_tracks_;
  std::unordered_map<StringId, StringId> process_names_;
  std::unordered_map<uint64_t, StringId> thread_names_;
  // One-entry caches: consecutive events usually share pid and tid.
  std::string_view last_pid_token_, last_tid_token_;
  StringId last_pid_ = 0, last_tid_ = 0;
};

StringId TraceParser::intern(std::string_view text) {
  uint64_t head = 0, tail = 0;
  const size_t size = text.size();
  std::memcpy(&head, text.data(), std::min<size_t>(size, 8));
  if (size > 8) std::memcpy(&tail, text.data() + size - 8, 8);
  uint64_t hash = (size * 0x9E3779B97F4A7C15ULL) ^ (head * 0xFF51AFD7ED558CCDULL) ^ (tail * 0xC4CEB9FE1A85EC53ULL);
  hash ^= hash >> 31;
  CachedString& slot = intern_cache_[hash & (intern_cache_.size() - 1)];
  if (slot.length == size && slot.text != nullptr && std::memcmp(slot.text, text.data(), size) == 0) return slot.id;
  StringId id = timeline_.strings.intern(text);
  slot = {timeline_.strings.view(id).data(), size, id};
  return id;
}

void TraceParser::note_malformed(size_t offset, const std::string& reason) {
  ++timeline_.stats.malformed_events;
  if (first_malformed_.empty()) first_malformed_ = "byte " + std::to_string(offset) + ": " + reason;
}

bool TraceParser::read_args(ondemand::value& value, ondemand::document& doc, EventFields& fields) {
  const char* start = value.raw_json_token().data();
  ondemand::object args;
  auto error = value.get_object().get(args);
  if (error == simdjson::INCORRECT_TYPE) return true;  // args of another type: ignored, not fatal
  if (error) return false;
  for (auto field_result : args) {
    ondemand::field field;
    if (std::move(field_result).get(field)) return false;
    const char* key = field.key().raw();
    ondemand::value arg = field.value();
    int64_t number = -1;
    switch (key[0]) {
      case 'c':
        if (key_is(key, "correlation")) {
          fields.correlation = detail::parse_int_token(arg.raw_json_token(), number) ? number : -1;
        }
        break;
      case 'E':
      case 'e':
        if (key_is(key, "External id") || key_is(key, "external id")) {
          fields.external_id = detail::parse_int_token(arg.raw_json_token(), number) ? number : -1;
        }
        break;
      case 'd':
        if (key_is(key, "device")) fields.device = detail::parse_int_token(arg.raw_json_token(), number) ? number : -1;
        break;
      case 's':
        if (key_is(key, "stream")) fields.stream = detail::parse_int_token(arg.raw_json_token(), number) ? number : -1;
        break;
      case 'n':
        if (key_is(key, "name")) {
          std::string_view text;
          if (arg.get_string().get(text) == simdjson::SUCCESS) fields.args_name = text;
        }
        break;
      default:
        break;
    }
  }
  // The object is consumed: the iterator sits on the token after its closing brace.
  const char* next = nullptr;
  if (doc.current_location().get(next)) return false;
  const char* close = next - 1;
  while (close > start && *close != '}') --close;
  fields.args_offset = static_cast<uint64_t>(start - data_);
  fields.args_length = static_cast<uint32_t>(close - start + 1);
  return true;
}

EventStatus TraceParser::parse_event(ondemand::object& object, ondemand::document& doc, size_t start) {
  EventFields fields;
  for (auto field_result : object) {
    ondemand::field field;
    if (std::move(field_result).get(field)) return EventStatus::Fatal;
    const char* key = field.key().raw();
    ondemand::value value = field.value();
    switch (key[0]) {
      case 'p':
        if (key_is(key, "ph")) {
          ondemand::raw_json_string raw;
          if (value.get_raw_json_string().get(raw) == simdjson::SUCCESS && raw.raw()[0] != '"' &&
              raw.raw()[1] == '"') {
            fields.phase = raw.raw()[0];
            fields.phase_ok = true;
          } else {
            fields.bad_phase = true;
          }
        } else if (key_is(key, "pid")) {
          fields.pid_token = value.raw_json_token();
        }
        break;
      case 't':
        if (key_is(key, "ts")) {
          fields.has_ts = true;
          fields.bad_ts = !detail::parse_time_ns(value.raw_json_token(), fields.ts_ns);
        } else if (key_is(key, "tid")) {
          fields.tid_token = value.raw_json_token();
        }
        break;
      case 'd':
        if (key_is(key, "dur")) {
          fields.has_dur = true;
          fields.bad_dur = !detail::parse_time_ns(value.raw_json_token(), fields.dur_ns);
        }
        break;
      case 'n':
        if (key_is(key, "name")) {
          std::string_view text;
          auto error = value.get_string().get(text);
          if (error == simdjson::SUCCESS) {
            fields.has_name = true;
            fields.name = intern(text);
          } else if (error == simdjson::INCORRECT_TYPE) {
            fields.bad_name = true;
          } else {
            return EventStatus::Fatal;
          }
        }
        break;
      case 'c':
        if (key_is(key, "cat")) {
          std::string_view text;
          auto error = value.get_string().get(text);
          if (error == simdjson::SUCCESS) {
            fields.category = intern(text);
            fields.has_category = true;
          } else if (error != simdjson::INCORRECT_TYPE) {
            return EventStatus::Fatal;
          }
        }
        break;
      case 'a':
        if (key_is(key, "args")) {
          if (!read_args(value, doc, fields)) return EventStatus::Fatal;
        }
        break;
      case 'i':
        if (key_is(key, "id")) {
          int64_t id = -1;
          fields.flow_id = detail::parse_int_token(value.raw_json_token(), id) ? id : -1;
        }
        break;
      default:
        break;
    }
  }
  return store(fields, start);
}

uint32_t TraceParser::track_for(const EventFields& fields, EventKind kind) {
  StringId pid_text = 0, tid_text = 0;
  if (!fields.pid_token.empty()) {
    if (fields.pid_token == last_pid_token_) {
      pid_text = last_pid_;
    } else {
      std::string_view token = fields.pid_token;
      pid_text = detail::unquote_token(token) ? timeline_.strings.intern(token) : 0;
      last_pid_token_ = fields.pid_token;
      last_pid_ = pid_text;
    }
  }
  if (!fields.tid_token.empty()) {
    if (fields.tid_token == last_tid_token_) {
      tid_text = last_tid_;
    } else {
      std::string_view token = fields.tid_token;
      tid_text = detail::unquote_token(token) ? timeline_.strings.intern(token) : 0;
      last_tid_token_ = fields.tid_token;
      last_tid_ = tid_text;
    }
  }
  const bool gpu = is_gpu_side(kind);
  uint64_t key = (uint64_t{pid_text} << 32) | tid_text;
  auto& tracks = gpu ? gpu_tracks_ : cpu_tracks_;
  auto [it, inserted] = tracks.try_emplace(key, static_cast<uint32_t>(timeline_.tracks.size()));
  if (!inserted) return it->second;

  Track track;
  track.kind = gpu ? TrackKind::Gpu : TrackKind::Cpu;
  track.pid_text = pid_text;
  track.tid_text = tid_text;
  int64_t number = -1;
  if (detail::parse_int_token(timeline_.strings.view(pid_text), number)) track.pid = number;
  if (detail::parse_int_token(timeline_.strings.view(tid_text), number)) track.tid = number;
  if (gpu) {
    int64_t device = fields.device >= 0 ? fields.device : track.pid;
    track.device = device >= 0 && device <= INT32_MAX ? static_cast<int32_t>(device) : -1;
    track.stream = fields.stream >= 0 ? fields.stream : track.tid;
    std::string_view tid_view = timeline_.strings.view(tid_text);
    if (track.stream < 0 && tid_view.substr(0, 7) == "stream " &&
        detail::parse_int_token(tid_view.substr(7), number)) {
      track.stream = number;  // 2020 traces: tid "stream 7"
    }
  }
  timeline_.tracks.push_back(track);
  return it->second;
}

EventStatus TraceParser::store(EventFields& fields, size_t start) {
  ++timeline_.stats.events_seen;
  if (!fields.phase_ok) {
    note_malformed(start, fields.bad_phase ? "\"ph\" is not a one-letter string" : "missing \"ph\"");
    return EventStatus::Malformed;
  }
  if (fields.has_category) any_category_ = true;
  const char phase = fields.phase;
  if (phase == 'M') {
    if (fields.has_name && !fields.args_name.empty()) {
      std::string_view what = timeline_.strings.view(fields.name);
      std::string_view pid = fields.pid_token, tid = fields.tid_token;
      StringId pid_text = detail::unquote_token(pid) ? timeline_.strings.intern(pid) : 0;
      if (what == "process_name") {
        process_names_[pid_text] = timeline_.strings.intern(fields.args_name);
      } else if (what == "thread_name") {
        StringId tid_text = detail::unquote_token(tid) ? timeline_.strings.intern(tid) : 0;
        thread_names_[(uint64_t{pid_text} << 32) | tid_text] = timeline_.strings.intern(fields.args_name);
      }
    }
    return EventStatus::Skipped;
  }
  if (phase == 's' || phase == 'f' || phase == 't') {
    if (phase == 's' && fields.has_category && fields.flow_id >= 0 &&
        is_cpu_gpu_flow(timeline_.strings.view(fields.category))) {
      timeline_.flow_correlation.push_back(fields.flow_id);
    }
    return EventStatus::Skipped;
  }
  const bool instant = phase == 'i' || phase == 'I';
  if (phase != 'X' && !instant) {
    ++timeline_.stats.unknown_phases;
    return EventStatus::Skipped;
  }
  if (!fields.has_name || fields.bad_name) {
    note_malformed(start, fields.bad_name ? "\"name\" is not a string" : "missing \"name\"");
    return EventStatus::Malformed;
  }
  if (!fields.has_ts || fields.bad_ts) {
    note_malformed(start, fields.bad_ts ? "\"ts\" is not a time in microseconds" : "missing \"ts\"");
    return EventStatus::Malformed;
  }
  if (!instant && (!fields.has_dur || fields.bad_dur)) {
    note_malformed(start, fields.bad_dur ? "\"dur\" is not a time in microseconds" : "missing \"dur\"");
    return EventStatus::Malformed;
  }

  EventKind kind;
  if (instant) {
    kind = timeline_.strings.view(fields.name) == "[memory]" ? EventKind::MemoryInstant : EventKind::Instant;
    fields.dur_ns = 0;
  } else {
    StringId category = fields.has_category ? fields.category : 0;
    if (category >= category_kind_.size()) category_kind_.resize(category + 1, 0);
    if (category_kind_[category] == 0) {
      category_kind_[category] =
          static_cast<uint8_t>(static_cast<uint8_t>(kind_of_category(timeline_.strings.view(category))) + 1);
    }
    kind = static_cast<EventKind>(category_kind_[category] - 1);
  }
  if (fields.dur_ns < 0) {
    ++timeline_.stats.negative_durations;
    fields.dur_ns = 0;
  }

  Events& events = timeline_.events;
  if (events.size() >= kNone - 1) {
    note_malformed(start, "more events than a timeline can hold");
    return EventStatus::Malformed;
  }
  events.ts_ns.push_back(fields.ts_ns);
  events.dur_ns.push_back(fields.dur_ns);
  events.kind.push_back(kind);
  events.name.push_back(fields.name);
  events.category.push_back(fields.has_category ? fields.category : 0);
  events.track.push_back(track_for(fields, kind));
  events.correlation.push_back(fields.correlation);
  events.external_id.push_back(fields.external_id);
  events.args_offset.push_back(fields.args_offset);
  events.args_length.push_back(fields.args_length);
  return EventStatus::Stored;
}

size_t TraceParser::window_limit(size_t start) const {
  if (size_ - start <= kWindowBytes) return size_;
  const size_t cut = start + kWindowBytes;
  const size_t floor = start + kWindowBytes / 2;
  if (const void* newline = memrchr(data_ + floor, '\n', cut - floor)) {
    return static_cast<size_t>(static_cast<const char*>(newline) - data_) + 1;
  }
  // Minified JSON: cut after a "}," (inside a string this only costs a slower re-read of the window).
  for (size_t i = cut; i > floor; --i) {
    if (data_[i - 1] == ',' && data_[i - 2] == '}') return i;
  }
  return cut;
}

TraceParser::SingleResult TraceParser::parse_single_event(size_t start) {
  const detail::EventExtent extent = detail::event_extent(data_, size_, start, extent_scan_budget_);
  const size_t end = extent.end;
  if (end == kNotFound && extent.next_start == kNotFound) {
    list_cut_ = true;
    timeline_.stats.truncated_bytes = size_ - start;
    warn("file ends inside an event at byte " + std::to_string(start) + "; kept " +
         with_commas(timeline_.events.size()) + " events, lost " + with_commas(size_ - start) + " bytes");
    return {size_, false, true};
  }
  simdjson::error_code error = simdjson::SUCCESS;
  size_t error_at = start;
  if (end == kNotFound) {
    error = simdjson::UNCLOSED_STRING;  // never closes, yet events follow: an unescaped quote
  } else if (end - start > kMaxEventBytes) {
    error = simdjson::CAPACITY;
  } else {
    ondemand::document doc;
    error = parser_.iterate(data_ + start, end - start, buffer_.capacity - start).get(doc);
    if (!error) {
      ondemand::object object;
      error = doc.get_object().get(object);
      if (error == simdjson::INCORRECT_TYPE) {
        ++timeline_.stats.events_seen;
        note_malformed(start, "expected an object for an event");
        return {end, false, false};
      }
      if (!error) {
        EventStatus status = parse_event(object, doc, start);
        if (status != EventStatus::Fatal) return {end, false, false};
        error = simdjson::TAPE_ERROR;
        const char* location = nullptr;
        if (doc.current_location().get(location) == simdjson::SUCCESS && location >= data_ + start &&
            location < data_ + end) {
          error_at = static_cast<size_t>(location - data_);
        }
      }
    }
  }
  // A syntax error inside this event: skip to the next plausible event start.
  std::string message = "byte " + std::to_string(error_at) + ": " +
                        (error == simdjson::CAPACITY ? std::string("event larger than 256 MiB") : describe(error)) +
                        " in an event";
  if (first_syntax_error_.empty()) first_syntax_error_ = message;
  size_t resume = detail::find_event_start(data_, size_, start + 1);
  if (resume == kNotFound) {
    list_cut_ = true;
    timeline_.stats.truncated_bytes = size_ - start;
    timeline_.stats.lost_bytes += size_ - start;
    warn(message + "; no event follows it: kept " + with_commas(timeline_.events.size()) + " events, lost " +
         with_commas(size_ - start) + " bytes");
    return {size_, false, true};
  }
  ++timeline_.stats.recovered_errors;
  timeline_.stats.lost_bytes += resume - start;
  if (++syntax_warnings_ <= kMaxWarningsPerKind) {
    warn(message + "; skipped that event (byte " + std::to_string(start) + ", " + with_commas(resume - start) +
         " bytes) and resumed at byte " + std::to_string(resume));
  }
  return {resume, true, false};
}

size_t TraceParser::parse_event_list(size_t pos) {
  saw_event_list_ = true;
  bool expect_element = true;  // right after '[' or ','
  bool first = true;
  size_t single_until = 0;  // after a window fails in stage 1, events up to here are read one by one
  while (true) {
    report_bytes(pos);
    pos = detail::skip_space(data_, size_, pos);
    if (pos >= size_) {
      list_cut_ = true;
      if (timeline_.stats.truncated_bytes == 0) {
        warn("file ends inside the event list (no closing ']'); kept " + with_commas(timeline_.events.size()) +
             " events");
      }
      return kNotFound;
    }
    char c = data_[pos];
    if (c == ']' && (first || !expect_element)) return pos + 1;
    if (c == ',' && !expect_element) {
      expect_element = true;
      ++pos;
      continue;
    }
    if (!expect_element || c == ']' || c == ',') {
      // Structure broken between events: look for the next event.
      std::string message = "byte " + std::to_string(pos) + ": expected ',' or ']' between events";
      if (first_syntax_error_.empty()) first_syntax_error_ = message;
      size_t resume = detail::find_event_start(data_, size_, pos + 1);
      if (resume == kNotFound) {
        list_cut_ = true;
        timeline_.stats.truncated_bytes = size_ - pos;
        timeline_.stats.lost_bytes += size_ - pos;
        warn(message + "; kept " + with_commas(timeline_.events.size()) + " events, lost " +
             with_commas(size_ - pos) + " bytes");
        return kNotFound;
      }
      ++timeline_.stats.recovered_errors;
      timeline_.stats.lost_bytes += resume - pos;
      if (++syntax_warnings_ <= kMaxWarningsPerKind) warn(message + "; resumed at byte " + std::to_string(resume));
      pos = resume;
      expect_element = true;
      continue;
    }
    first = false;
    const size_t start = pos;
    if (start < single_until || c != '{') {
      SingleResult single = parse_single_event(start);
      if (single.stop) return kNotFound;
      pos = single.pos;
      expect_element = single.at_event_start;
      continue;
    }

    // A window of events as one array document.
    const size_t limit = window_limit(start);
    // simdjson checks that a root array's last byte is ']': the byte after the window (a byte of the next
    // window, or spare padding at the end of the file) is patched too.
    const char saved_open = data_[start - 1];
    const char saved_close = data_[limit];
    data_[start - 1] = '[';
    data_[limit] = ']';
    auto restore = [&] {
      data_[start - 1] = saved_open;
      data_[limit] = saved_close;
    };
    ondemand::document doc;
    auto stage1 = parser_.iterate(data_ + start - 1, limit - start + 2,
                                  buffer_.capacity + detail::PaddedBuffer::kSpare - start + 1).get(doc);
    if (stage1) {
      restore();
      single_until = limit;
      continue;  // re-read this window event by event
    }
    ondemand::array array;
    // Where to continue: after the last event handled. To save a location query per event it is kept as
    // the start of the last object read, whose end is found with the byte scanner only when needed.
    size_t resume = start;
    size_t last_object = kNotFound;
    size_t failed_at = kNotFound;  // where reading stopped in this window
    bool failed_at_event = false;  // failed_at is the start of an event (else it is `resume`)
    bool closed = false;
    if (doc.get_array().get(array) == simdjson::SUCCESS) {
      closed = true;
      for (auto element_result : array) {
        ondemand::value element;
        if (element_result.get(element)) {
          closed = false;
          break;
        }
        const auto element_start = static_cast<size_t>(element.raw_json_token().data() - data_);
        ondemand::object object;
        auto error = element.get_object().get(object);
        if (error == simdjson::INCORRECT_TYPE) {
          size_t end = detail::skip_value(data_, limit, element_start);
          if (end == kNotFound) {
            closed = false;
            failed_at = element_start;
            failed_at_event = true;
            break;
          }
          ++timeline_.stats.events_seen;
          note_malformed(element_start, "expected an object for an event");
          resume = end;
          last_object = kNotFound;
          continue;
        }
        if (error || parse_event(object, doc, element_start) == EventStatus::Fatal) {
          closed = false;
          failed_at = element_start;
          failed_at_event = true;
          break;
        }
        last_object = element_start;
      }
    }
    restore();
    if (last_object != kNotFound) {
      size_t end = detail::skip_value(data_, size_, last_object);
      resume = end == kNotFound ? size_ : end;
    }
    if (!closed && failed_at == kNotFound) failed_at = resume;
    if (closed) {
      size_t close = detail::skip_space(data_, size_, resume);
      if (close < size_ && data_[close] == ']') return close + 1;
      // The array parser accepted the window but our bookkeeping disagrees: continue conservatively.
      pos = resume;
      expect_element = false;
      continue;
    }
    if (failed_at == kNotFound) {
      failed_at = start;
      failed_at_event = true;
    }
    if (failed_at > start) {
      // Progress: the window ended inside an event (or an error follows); the next window starts there.
      pos = failed_at;
      expect_element = failed_at_event;
      continue;
    }
    // No progress on the window's first event: read it alone (it may be larger than a window, broken,
    // or cut off by the end of the file), and the rest of this window event by event: indexing a new
    // window after every broken event would be quadratic when many are broken.
    single_until = limit;
    SingleResult single = parse_single_event(start);
    if (single.stop) return kNotFound;
    pos = single.pos;
    expect_element = single.at_event_start;
  }
}

std::optional<std::string> TraceParser::parse_top_level_value(std::string_view key, size_t start, size_t end) {
  const bool devices = key == "deviceProperties";
  const bool distributed = key == "distributedInfo";
  const bool base_time = key == "baseTimeNanoseconds";
  if (!devices && !distributed && !base_time) return std::nullopt;
  if (base_time) {
    int64_t value = 0;
    if (detail::parse_int_token({data_ + start, end - start}, value)) {
      base_time_ns_ = value;
    } else {
      warn("byte " + std::to_string(start) + ": baseTimeNanoseconds is not an integer; ignored");
    }
    return std::nullopt;
  }
  ondemand::document doc;
  if (parser_.iterate(data_ + start, end - start, buffer_.capacity - start).get(doc)) {
    warn("byte " + std::to_string(start) + ": invalid JSON in " + std::string(key) + "; ignored");
    return std::nullopt;
  }
  auto read_int = [](ondemand::value& value, int64_t& out) {
    return detail::parse_int_token(value.raw_json_token(), out);
  };
  if (distributed) {
    ondemand::object object;
    if (doc.get_object().get(object)) return std::nullopt;
    for (auto field_result : object) {
      ondemand::field field;
      if (std::move(field_result).get(field)) break;
      const char* raw = field.key().raw();
      ondemand::value value = field.value();
      int64_t number = 0;
      if (key_is(raw, "rank") && read_int(value, number) && number >= 0 && number <= INT32_MAX) {
        timeline_.rank = static_cast<int>(number);
        timeline_.rank_from_trace = true;
      } else if (key_is(raw, "backend")) {
        std::string_view backend;
        if (!value.get_string().get(backend)) timeline_.backend = std::string(backend);
      } else if (key_is(raw, "world_size") && read_int(value, number) && number >= 1 && number <= INT32_MAX) {
        timeline_.world_size = static_cast<int>(number);
      }
    }
    return std::nullopt;
  }
  ondemand::array array;
  if (doc.get_array().get(array)) return std::nullopt;
  for (auto element_result : array) {
    ondemand::object object;
    if (element_result.get_object().get(object)) break;
    DeviceInfo device;
    bool has_id = false;
    for (auto field_result : object) {
      ondemand::field field;
      if (std::move(field_result).get(field)) break;
      const char* raw = field.key().raw();
      ondemand::value value = field.value();
      int64_t number = 0;
      if (key_is(raw, "id")) {
        if (read_int(value, number) && number >= 0 && number <= INT32_MAX) {
          device.id = static_cast<int32_t>(number);
          has_id = true;
        }
      } else if (key_is(raw, "name")) {
        std::string_view text;
        if (value.get_string().get(text) == simdjson::SUCCESS) device.name = std::string(text);
      } else if (key_is(raw, "totalGlobalMem")) {
        if (read_int(value, number)) device.total_global_mem = number;
      } else if (key_is(raw, "computeMajor")) {
        if (read_int(value, number) && number >= -1 && number < 1000) device.compute_major = static_cast<int>(number);
      } else if (key_is(raw, "computeMinor")) {
        if (read_int(value, number) && number >= -1 && number < 1000) device.compute_minor = static_cast<int>(number);
      } else if (key_is(raw, "numSms")) {
        if (read_int(value, number) && number >= 0 && number < 1000000) device.num_sms = static_cast<int>(number);
      }
    }
    if (has_id) timeline_.devices.push_back(std::move(device));
  }
  return std::nullopt;
}

std::optional<std::string> TraceParser::parse_top_level() {
  size_t pos = 0;
  if (size_ >= 3 && std::memcmp(data_, "\xEF\xBB\xBF", 3) == 0) pos = 3;  // UTF-8 byte order mark
  pos = detail::skip_space(data_, size_, pos);
  if (pos >= size_) return label_ + ": the file is empty";
  if (data_[pos] == '[') {
    parse_event_list(pos + 1);
    return std::nullopt;
  }
  if (data_[pos] != '{') {
    return at(pos) + "expected a JSON object or array (this does not look like a PyTorch profiler trace)";
  }
  object_form_ = true;
  ++pos;
  bool first = true;
  // A broken value before the events (an unescaped quote in a device name inverts every later string) hides
  // where it ends; reading resumes at the line of the "traceEvents" key, when there is one after it.
  auto resume_at_events = [this](size_t value, std::string_view key) {
    const size_t next = detail::find_key_line(data_, size_, value, "traceEvents");
    if (next != kNotFound) {
      warn("byte " + std::to_string(value) + ": the value of the top-level key \"" + std::string(key) +
           "\" is not valid JSON (an unescaped quote?); ignored it up to \"traceEvents\" at byte " +
           std::to_string(next));
    }
    return next;
  };
  while (true) {
    pos = detail::skip_space(data_, size_, pos);
    if (pos >= size_) {
      if (saw_event_list_) {
        if (!list_cut_) warn("file ends before the closing '}' of the top-level object");
        return std::nullopt;
      }
      return at(pos) + "file ends before a \"traceEvents\" list was found";
    }
    if (data_[pos] == '}' && first) return std::nullopt;
    if (data_[pos] != '"') {
      std::string message = at(pos) + "expected a key string in the top-level object";
      if (saw_event_list_) {
        warn(message.substr(label_.size() + 2) + "; the rest of the file was ignored");
        return std::nullopt;
      }
      return message;
    }
    size_t key_end = detail::skip_string(data_, size_, pos);
    if (key_end == kNotFound) return at(pos) + "unterminated key string in the top-level object";
    std::string_view key(data_ + pos + 1, key_end - pos - 2);
    pos = detail::skip_space(data_, size_, key_end);
    if (pos >= size_ || data_[pos] != ':') {
      if (saw_event_list_) {
        warn("byte " + std::to_string(pos) + ": expected ':' after a top-level key; the rest was ignored");
        return std::nullopt;
      }
      return at(pos) + "expected ':' after the key \"" + std::string(key) + "\"";
    }
    pos = detail::skip_space(data_, size_, pos + 1);
    if (key == "traceEvents") {
      if (pos >= size_ || data_[pos] != '[') return at(pos) + "expected an array for \"traceEvents\"";
      size_t after = parse_event_list(pos + 1);
      if (after == kNotFound) return std::nullopt;  // cut short; what came before is kept
      pos = after;
    } else {
      size_t end = detail::skip_value(data_, size_, pos);
      if (end == kNotFound) {
        if (saw_event_list_) {
          warn("byte " + std::to_string(pos) + ": file ends inside the top-level key \"" + std::string(key) +
               "\" after the events");
          return std::nullopt;
        }
        if (size_t next = resume_at_events(pos, key); next != kNotFound) {
          pos = next;
          first = false;
          continue;
        }
        return at(pos) + "file ends inside the value of the top-level key \"" + std::string(key) + "\"";
      }
      const size_t after = detail::skip_space(data_, size_, end);
      if (after < size_ && data_[after] != ',' && data_[after] != '}' && !saw_event_list_) {
        if (size_t next = resume_at_events(pos, key); next != kNotFound) {
          pos = next;
          first = false;
          continue;
        }
      }
      if (auto error = parse_top_level_value(key, pos, end)) return error;
      pos = end;
    }
    first = false;
    pos = detail::skip_space(data_, size_, pos);
    if (pos < size_ && data_[pos] == ',') {
      ++pos;
      continue;
    }
    if (pos < size_ && data_[pos] == '}') return std::nullopt;
    if (saw_event_list_) {
      warn("byte " + std::to_string(pos) + ": expected ',' or '}' in the top-level object; the rest was ignored");
      return std::nullopt;
    }
    return at(pos) + "expected ',' or '}' after the value of \"" + std::string(key) + "\"";
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
}

std::variant<Timeline, LoadError> TraceParser::run(const LoadOptions& options) {
  timeline_.path = label_;
  timeline_.stats.bytes = size_;
  extent_scan_budget_ = 4 * size_ + (size_t{1} << 20);
  const size_t estimate = size_ / 300 + 16;
  Events& events = timeline_.events;
  events.ts_ns.reserve(estimate);
  events.dur_ns.reserve(estimate);
  events.kind.reserve(estimate);
  events.name.reserve(estimate);
  events.category.reserve(estimate);
  events.track.reserve(estimate);
  events.correlation.reserve(estimate);
  events.external_id.reserve(estimate);
  events.args_offset.reserve(estimate);
  events.args_length.reserve(estimate);

  on_bytes_ = &options.on_bytes_parsed;
  if (auto error = parse_top_level()) return LoadError{*error};
  report_bytes(size_);
  const LoadStats& stats = timeline_.stats;
  if (object_form_ && !saw_event_list_) {
    return LoadError{label_ + ": no \"traceEvents\" list: this JSON is not a PyTorch profiler trace"};
  }
  if (stats.events_seen == 0) {
    if (!first_syntax_error_.empty()) return LoadError{label_ + ": " + first_syntax_error_};
    if (list_cut_) return LoadError{label_ + ": file ends before the first complete event"};
    return LoadError{label_ + ": the trace has no events"};
  }
  if (events.size() == 0 && stats.malformed_events == stats.events_seen) {
    return LoadError{label_ + ": " + first_malformed_ + " (none of the " + with_commas(stats.events_seen) +
                     " entries of the event list is a usable event: is this a PyTorch profiler trace?)"};
  }
  finish();

  timeline_.buffer_owner = std::shared_ptr<const void>(buffer_.owner, buffer_.data);
  timeline_.buffer = buffer_.data;
  timeline_.buffer_size = size_;
  if (options.link) {
    detail::link_timeline(timeline_);
    detail::infer_devices(timeline_);
  }
  return std::move(timeline_);
}

std::variant<Timeline, LoadError> load_from(detail::InputResult input, const std::string& label,
                                           const LoadOptions& options) {
  if (!input.ok()) return LoadError{label + ": " + input.error};
  TraceParser parser(std::move(input.buffer), label);
  auto result = parser.run(options);
  if (auto* timeline = std::get_if<Timeline>(&result)) {
    std::vector<std::string> first;
    for (const auto& warning : input.warnings) first.push_back(label + ": " + warning);
    timeline->stats.warnings.insert(timeline->stats.warnings.begin(), first.begin(), first.end());
    timeline->stats.unread_bytes = input.unread_bytes;
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
  return load_from(detail::read_input_file(path), path == "-" ? "<stdin>" : path, options);
}

std::variant<Timeline, LoadError> load_trace_bytes(std::string_view bytes, const std::string& label,
                                                   const LoadOptions& options) {
  return load_from(detail::copy_input_bytes(bytes), label, options);
}

std::variant<std::vector<Timeline>, LoadError> load_traces(const std::vector<std::string>& paths,
                                                           const LoadOptions& options) {
  std::vector<Timeline> timelines;
  for (const std::string& path : paths) {
    std::error_code error;
    if (!std::filesystem::is_directory(path, error)) {
      auto result = load_trace_file(path, options);
      if (auto* failure = std::get_if<LoadError>(&result)) return std::move(*failure);
      Timeline timeline = std::move(std::get<Timeline>(result));
      if (!timeline.rank) timeline.rank = rank_from_file_name(std::filesystem::path(path).filename().string());
      timelines.push_back(std::move(timeline));
      if (options.on_file_loaded) options.on_file_loaded(1, 1, timelines.back().stats.bytes);
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (std::filesystem::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
      std::error_code type_error;
      if (it->is_regular_file(type_error) && is_trace_file_name(it->path().filename().string())) {
        files.push_back(it->path());
      }
    }
    if (error) return LoadError{path + ": cannot list the directory: " + error.message()};
    if (files.empty()) return LoadError{path + ": no trace files (*.json, *.json.gz) in this directory"};
    std::sort(files.begin(), files.end());
    timelines.reserve(timelines.size() + files.size());
    for (size_t order = 0; order < files.size(); ++order) {
      auto result = load_trace_file(files[order].string(), options);
      if (auto* failure = std::get_if<LoadError>(&result)) return std::move(*failure);
      Timeline timeline = std::move(std::get<Timeline>(result));
      if (!timeline.rank) timeline.rank = rank_from_file_name(files[order].filename().string());
      if (!timeline.rank) timeline.rank = static_cast<int>(order);
      timelines.push_back(std::move(timeline));
      if (options.on_file_loaded) options.on_file_loaded(order + 1, files.size(), timelines.back().stats.bytes);
    }
  }
  std::stable_sort(timelines.begin(), timelines.end(), [](const Timeline& a, const Timeline& b) {
    return a.rank.value_or(INT32_MAX) < b.rank.value_or(INT32_MAX);
  });
  return timelines;
}

}  // namespace ptadvise
