// The top level of a trace: the object around the event list (or a bare array), and the values read
// from it besides the events: deviceProperties, distributedInfo, baseTimeNanoseconds.
#include <cstring>

#include "checked_iterate.h"
#include "json_scan.h"
#include "numbers.h"
#include "trace_parser.h"

namespace ptadvise::detail {

namespace ondemand = simdjson::ondemand;

namespace {

}  // namespace

std::optional<std::string> TraceParser::parse_top_level_value(std::string_view key, size_t start, size_t end) {
  const bool devices = key == "deviceProperties";
  const bool distributed = key == "distributedInfo";
  const bool base_time = key == "baseTimeNanoseconds";
  if (!devices && !distributed && !base_time) return std::nullopt;
  if (base_time) {
    int64_t value = 0;
    if (parse_int_token({data_ + start, end - start}, value)) {
      base_time_ns_ = value;
    } else {
      warn("byte " + std::to_string(start) + ": baseTimeNanoseconds is not an integer; ignored");
    }
    return std::nullopt;
  }
  ondemand::document doc;
  if (checked_iterate(parser_, data_ + start, end - start, buffer_.capacity - start, doc)) {
    warn("byte " + std::to_string(start) + ": invalid JSON in " + std::string(key) + "; ignored");
    return std::nullopt;
  }
  auto read_int = [](ondemand::value& value, int64_t& out) {
    return parse_int_token(value.raw_json_token(), out);
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
  pos = skip_space_read(pos);
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
    fill_all();
    const size_t next = find_key_line(data_, size_, value, "traceEvents");
    if (next != kNotFound) {
      warn("byte " + std::to_string(value) + ": the value of the top-level key \"" + std::string(key) +
           "\" is not valid JSON (an unescaped quote?); ignored it up to \"traceEvents\" at byte " +
           std::to_string(next));
    }
    return next;
  };
  while (true) {
    pos = skip_space_read(pos);
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
    size_t key_end = skip_string(data_, filled_, pos);
    if (key_end == kNotFound && pending_) {  // reached the bytes not read yet
      fill_all();
      key_end = skip_string(data_, size_, pos);
    }
    if (key_end == kNotFound) return at(pos) + "unterminated key string in the top-level object";
    std::string_view key(data_ + pos + 1, key_end - pos - 2);
    pos = skip_space_read(key_end);
    if (pos >= size_ || data_[pos] != ':') {
      if (saw_event_list_) {
        warn("byte " + std::to_string(pos) + ": expected ':' after a top-level key; the rest was ignored");
        return std::nullopt;
      }
      return at(pos) + "expected ':' after the key \"" + std::string(key) + "\"";
    }
    pos = skip_space_read(pos + 1);
    if (key == "traceEvents") {
      if (pos >= size_ || data_[pos] != '[') return at(pos) + "expected an array for \"traceEvents\"";
      size_t after = parse_event_list(pos + 1);
      if (after == kNotFound) return std::nullopt;  // cut short; what came before is kept
      pos = after;
    } else {
      size_t end = value_end_read(pos);
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
      const size_t after = skip_space_read(end);
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
    pos = skip_space_read(pos);
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

}  // namespace ptadvise::detail
