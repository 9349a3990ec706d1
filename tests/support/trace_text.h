// A trace's text cut into its events, for tests that rewrite real traces (another event order, clocks
// shifted, a shorter window) without a DOM of the whole file: simdjson finds each event's text, each
// event's fields are found as spans of that text, and a rewrite splices new values into it. A DOM
// (nlohmann::json) of the corpus' 750 MB took four fifths of these tests' time.
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gzip_bytes.h"

namespace ptadvise::testing {

// The text of a trace cut around its event list: before the first event, the events as written, after
// the last one.
struct EventList {
  std::string before, after;
  std::vector<std::string_view> events;  // views into the text given to split_event_list
  std::vector<double> ts;                // each event's "ts" (0 when it has none)
};

// One field of a JSON object: its key (unescaped, and as written) and its value's text, with the value's
// offset in the object's text.
struct FieldText {
  std::string key;
  std::string_view key_text;  // into the object's text, with its quotes
  std::string_view value;     // into the object's text; a string keeps its quotes
  size_t offset = 0;          // of `value` in the object's text
};

// The top-level fields of one JSON object's text, in their order; nullopt when it is not one object.
inline std::optional<std::vector<FieldText>> object_fields(simdjson::ondemand::parser& parser, std::string_view raw) {
  const simdjson::padded_string copy(raw);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(copy).get(doc) || doc.get_object().get(object)) return std::nullopt;
  std::vector<FieldText> fields;
  for (auto field_result : object) {
    simdjson::ondemand::field field;
    std::string_view key, value_raw;
    if (std::move(field_result).get(field)) return std::nullopt;
    // Where the key is written, before unescaped_key() consumes it: just past its opening quote.
    const size_t key_at = static_cast<size_t>(field.key().raw() - copy.data()) - 1;
    if (field.unescaped_key().get(key)) return std::nullopt;
    simdjson::ondemand::value& value = field.value();
    simdjson::ondemand::json_type type = simdjson::ondemand::json_type::null;
    if (value.type().get(type)) return std::nullopt;
    if (type == simdjson::ondemand::json_type::object) {
      simdjson::ondemand::object inner;
      if (value.get_object().get(inner) || inner.raw_json().get(value_raw)) return std::nullopt;
    } else if (type == simdjson::ondemand::json_type::array) {
      simdjson::ondemand::array inner;
      if (value.get_array().get(inner) || inner.raw_json().get(value_raw)) return std::nullopt;
    } else {
      value_raw = value.raw_json_token();
    }
    while (!value_raw.empty() && (value_raw.back() == ' ' || value_raw.back() == '\n' || value_raw.back() == '\r' ||
                                  value_raw.back() == '\t')) {
      value_raw.remove_suffix(1);
    }
    const size_t offset = static_cast<size_t>(value_raw.data() - copy.data());
    size_t key_end = raw.rfind(':', offset);
    while (key_end > key_at && raw[key_end - 1] != '"') --key_end;
    fields.push_back({std::string(key), raw.substr(key_at, key_end - key_at), raw.substr(offset, value_raw.size()), offset});
  }
  return fields;
}

// The categories of the events on a GPU's tracks (kernels, copies, sets, GPU annotations, syncs), whose
// pid is the device and tid the stream, in every era's spelling.
inline bool gpu_side_category(std::string_view category) {
  static constexpr std::string_view kGpu[] = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset",
                                              "Memset", "gpu_user_annotation", "cuda_sync"};
  return std::find(std::begin(kGpu), std::end(kGpu), category) != std::end(kGpu);
}

// The field named `key`, or nullptr.
inline const FieldText* find_field(const std::vector<FieldText>& fields, std::string_view key) {
  for (const FieldText& field : fields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

// A string field's text without its quotes (escapes kept); empty when absent or not a string.
inline std::string_view string_field(const std::vector<FieldText>& fields, std::string_view key) {
  const FieldText* field = find_field(fields, key);
  if (field == nullptr || field->value.size() < 2 || field->value.front() != '"') return {};
  return field->value.substr(1, field->value.size() - 2);
}

// A number field's value; nullopt when absent or not a number.
inline std::optional<double> number_field(const std::vector<FieldText>& fields, std::string_view key) {
  const FieldText* field = find_field(fields, key);
  if (field == nullptr) return std::nullopt;
  double value = 0;
  const auto [end, error] = std::from_chars(field->value.data(), field->value.data() + field->value.size(), value);
  if (error != std::errc() || end != field->value.data() + field->value.size()) return std::nullopt;
  return value;
}

// The object's text with one field's value replaced by `text`.
inline std::string with_value(std::string_view raw, const FieldText& field, std::string_view text) {
  std::string out(raw.substr(0, field.offset));
  out += text;
  out += raw.substr(field.offset + field.value.size());
  return out;
}

// A number as JSON text: integral values without a fraction, others in their shortest exact form.
inline std::string number_text(double value) {
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, written.ptr);
}

// A trace file's text, inflated when it is gzip, with simdjson's padding after it.
inline std::string read_trace_text(const std::string& path) { return gunzip_file(path, simdjson::SIMDJSON_PADDING); }

// nullopt when the text is not one JSON document with a non-empty event list (an object's "traceEvents"
// or a bare array). `text` comes from read_trace_text (it must have simdjson's padding) and outlives the
// list, which points into it.
inline std::optional<EventList> split_event_list(const std::string& text) {
  if (text.capacity() < text.size() + simdjson::SIMDJSON_PADDING) return std::nullopt;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(simdjson::padded_string_view(text.data(), text.size(), text.capacity())).get(doc)) {
    return std::nullopt;
  }
  simdjson::ondemand::array list;
  simdjson::ondemand::json_type type;
  if (doc.type().get(type)) return std::nullopt;
  if (type == simdjson::ondemand::json_type::array) {
    if (doc.get_array().get(list)) return std::nullopt;
  } else if (doc["traceEvents"].get_array().get(list)) {
    return std::nullopt;
  }
  EventList out;
  const char* begin = text.data();
  const char* first = nullptr;
  const char* last_end = nullptr;
  for (auto element : list) {
    simdjson::ondemand::object event;
    std::string_view raw;
    if (element.get_object().get(event) || event.raw_json().get(raw)) return std::nullopt;
    // Read by hand: a second document on the same parser would end the walk of this one.
    double ts = 0;
    const size_t at = raw.find("\"ts\"");
    if (at != std::string_view::npos) {
      size_t k = raw.find(':', at) + 1;
      while (k < raw.size() && (raw[k] == ' ' || raw[k] == '"')) ++k;
      const size_t end = std::min(raw.size(), k + 40);
      std::from_chars(raw.data() + k, raw.data() + end, ts);
    }
    if (first == nullptr) first = raw.data();
    last_end = raw.data() + raw.size();
    out.events.push_back(raw);
    out.ts.push_back(ts);
  }
  if (out.events.empty()) return std::nullopt;
  out.before.assign(begin, first);
  out.after.assign(last_end, begin + text.size());
  return out;
}

// Writes the events in `order` between the text before and after the list.
inline void write_events(std::ostream& out, const EventList& list, const std::vector<size_t>& order) {
  out << list.before;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0) out << ",\n";
    out << list.events[order[k]];
  }
  out << list.after;
}

// Writes the given event texts between the text before and after the list.
inline void write_events(std::ostream& out, const EventList& list, const std::vector<std::string>& events) {
  out << list.before;
  for (size_t k = 0; k < events.size(); ++k) {
    if (k > 0) out << ",\n";
    out << events[k];
  }
  out << list.after;
}

// The events written to a new file at `path`.
template <typename Events>
void write_events_file(const std::string& path, const EventList& list, const Events& events) {
  std::ofstream out(path, std::ios::binary);
  write_events(out, list, events);
}

}  // namespace ptadvise::testing
