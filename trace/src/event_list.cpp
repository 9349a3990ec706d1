// Reading the event list: windows of events (event_windows.h), and the recovery around broken events. Each
// window starts at an event; a window that fails is re-read event by event, a broken event is skipped by
// resynchronising at the next event, and a file cut short keeps everything before the cut.
#include <algorithm>
#include <string>

#include "checked_iterate.h"
#include "event_windows.h"
#include "json_scan.h"
#include "numbers.h"
#include "trace_parser.h"

namespace ptadvise::detail {

namespace ondemand = simdjson::ondemand;

namespace {

constexpr size_t kMaxEventBytes = size_t{256} << 20;  // one event larger than this is skipped
constexpr size_t kMaxWarningsPerKind = 3;

std::string simdjson_error_text(simdjson::error_code error) {
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

}  // namespace

void TraceParser::report_bytes(size_t pos) {
  constexpr size_t kEvery = size_t{1} << 20;  // a call per MiB at most: the display refreshes 4 times a second
  if (on_bytes_ && *on_bytes_ && (pos >= bytes_reported_ + kEvery || pos == size_)) {
    bytes_reported_ = pos;
    // While a gzip stream inflates its size is not known yet: the total shown is the expected one.
    (*on_bytes_)(pos, pending_ ? std::max(pos, expected_size_) : size_);
  }
}

TraceParser::SingleResult TraceParser::parse_single_event(size_t start) {
  fill_all();  // the extent scan, and the resynchronisation after a broken event, may run far
  const EventExtent extent = event_extent(data_, size_, start, extent_scan_budget_);
  const size_t end = extent.end;
  if (end == kNotFound && extent.next_start == kNotFound) {
    list_cut_ = true;
    timeline_.stats.truncated_bytes = size_ - start;
    flush_single();
    warn("file ends inside an event at byte " + std::to_string(start) + "; kept " +
         with_commas(timeline_.events.size()) + " events, lost " + with_commas(size_ - start) + " bytes");
    return {size_, false, true};
  }
  simdjson::error_code error = simdjson::SUCCESS;
  size_t error_at = start;
  // One attempt at the event's bytes; true when it was read (stored, skipped or malformed).
  auto attempt = [&]() {
    ondemand::document doc;
    error = checked_iterate(parser_, data_ + start, end - start, buffer_.capacity - start, doc);
    if (error) return false;
    ondemand::object object;
    error = doc.get_object().get(object);
    if (error == simdjson::INCORRECT_TYPE) {
      ++single_.chunk().events_seen;
      single_.note_malformed(start, "expected an object for an event");
      return true;
    }
    if (error) return false;
    single_.set_origin(data_, 0, data_ + end);
    if (single_.parse_event(object, doc, start) != EventStatus::Fatal) return true;
    error = simdjson::TAPE_ERROR;
    const char* location = nullptr;
    if (doc.current_location().get(location) == simdjson::SUCCESS && location >= data_ + start &&
        location < data_ + end) {
      error_at = static_cast<size_t>(location - data_);
    }
    return false;
  };
  if (end == kNotFound) {
    error = simdjson::UNCLOSED_STRING;  // never closes, yet events follow: an unescaped quote
  } else if (end - start > kMaxEventBytes) {
    error = simdjson::CAPACITY;
  } else if (attempt()) {
    return {end, false, false};
  } else {
    // Invalid UTF-8 (a name cut inside a character) or an unpaired surrogate escape: the event is read
    // with those bytes replaced rather than lost with its time (docs/TRACE_LOADING.md, "Recoverable"). When
    // that does not help, the first error is the one told.
    const simdjson::error_code first_error = error;
    const size_t failed_at = error_at;
    if (repair_text(data_, start, end) > 0) {
      error_at = start;
      if (attempt()) {
        if (repaired_events_++ == 0) first_repaired_ = start;
        return {end, false, false};
      }
    }
    error = first_error;
    error_at = failed_at;
  }
  // A syntax error inside this event: skip to the next plausible event start.
  std::string message = "byte " + std::to_string(error_at) + ": " +
                        (error == simdjson::CAPACITY ? std::string("event larger than 256 MiB") : simdjson_error_text(error)) +
                        " in an event";
  if (first_syntax_error_.empty()) first_syntax_error_ = message;
  size_t resume = find_event_start(data_, size_, start + 1);
  if (resume == kNotFound) {
    list_cut_ = true;
    timeline_.stats.truncated_bytes = size_ - start;
    timeline_.stats.lost_bytes += size_ - start;
    flush_single();
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
  // Windows are read ahead on other cores when the list spans several of them.
  const unsigned workers = size_ - pos > 2 * kWindowBytes && threads_ > 1 ? threads_ - 1 : 0;
  windows_ = std::make_unique<WindowPool>(data_, size_, buffer_.capacity + PaddedBuffer::kSpare, workers, keep_.get());
  const size_t after = read_event_list(pos);
  flush_single();
  windows_.reset();
  fill_all();  // the rest of the top-level object
  drop_spare();
  return after;
}

size_t TraceParser::read_event_list(size_t pos) {
  bool expect_element = true;  // right after '[' or ','
  bool first = true;
  size_t single_until = 0;  // after a window fails in stage 1, events up to here are read one by one
  // Incremental reads stay this far ahead: the windows read ahead lie in bytes read.
  const size_t read_ahead_bytes = std::max(kReadAhead, (2 * threads_ + 3) * kWindowBytes);
  while (true) {
    report_bytes(pos);
    fill(pos + read_ahead_bytes);
    pos = skip_space_read(pos);
    if (pos >= size_) {
      list_cut_ = true;
      if (timeline_.stats.truncated_bytes == 0) {
        flush_single();
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
      fill_all();
      size_t resume = find_event_start(data_, size_, pos + 1);
      if (resume == kNotFound) {
        list_cut_ = true;
        timeline_.stats.truncated_bytes = size_ - pos;
        timeline_.stats.lost_bytes += size_ - pos;
        flush_single();
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
    const size_t limit = window_limit(data_, size_, start);
    windows_->read_ahead(start, filled_);
    WindowResult window = windows_->take(start, limit);
    flush_single();
    merge(std::move(window.chunk));
    release_before(start);
    if (window.stage1_failed) {
      single_until = limit;
      continue;  // re-read this window event by event
    }
    size_t resume = window.resume;
    if (window.last_object != kNotFound) {
      size_t end = window.last_object_end;
      if (end == kNotFound) end = value_end_read(window.last_object);
      resume = end == kNotFound ? size_ : end;
    }
    size_t failed_at = window.failed_at;
    bool failed_at_event = window.failed_at_event;
    if (!window.closed && failed_at == kNotFound) failed_at = resume;
    if (window.closed) {
      size_t close = skip_space_read(resume);
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

}  // namespace ptadvise::detail
