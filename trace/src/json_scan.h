// Internal to trace/: a byte-level JSON scanner for the few places simdjson cannot be pointed at a
// bounded region yet: the top-level object's keys, the extent of one event, resynchronising after a
// syntax error. Never used on the hot path of well-formed event lists.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

namespace ptadvise::detail {

inline constexpr size_t kNotFound = static_cast<size_t>(-1);

// Makes the text of one event readable where a writer left bytes no JSON parser takes, without moving any
// byte: each byte of an invalid UTF-8 sequence (a name cut inside a multi-byte character, Latin-1 text)
// becomes '?', and each \u escape of an unpaired surrogate becomes \ufffd. Returns how many were replaced.
inline size_t repair_text(char* data, size_t begin, size_t end) {
  auto hex4 = [&](size_t at, unsigned& value) {
    if (at + 4 > end) return false;
    value = 0;
    for (size_t k = at; k < at + 4; ++k) {
      const char c = data[k];
      const unsigned digit = c >= '0' && c <= '9'   ? static_cast<unsigned>(c - '0')
                             : c >= 'a' && c <= 'f' ? static_cast<unsigned>(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? static_cast<unsigned>(c - 'A' + 10)
                                                    : 16u;
      if (digit == 16) return false;
      value = value * 16 + digit;
    }
    return true;
  };
  size_t replaced = 0;
  size_t i = begin;
  while (i < end) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c == '\\') {
      unsigned unit = 0, low = 0;
      if (i + 1 < end && data[i + 1] == 'u' && hex4(i + 2, unit) && unit >= 0xD800 && unit <= 0xDFFF) {
        const bool paired = unit <= 0xDBFF && i + 7 < end && data[i + 6] == '\\' && data[i + 7] == 'u' &&
                            hex4(i + 8, low) && low >= 0xDC00 && low <= 0xDFFF;
        if (paired) {
          i += 12;
          continue;
        }
        std::memcpy(data + i + 2, "fffd", 4);
        ++replaced;
        i += 6;
        continue;
      }
      i += 2;  // any other escape: its second byte is never the start of one
      continue;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    unsigned char low_bound = 0x80, high_bound = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low_bound = 0xA0;  // overlong
      if (c == 0xED) high_bound = 0x9F;  // UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low_bound = 0x90;  // overlong
      if (c == 0xF4) high_bound = 0x8F;  // past U+10FFFF
    }
    bool valid = length > 0 && i + length <= end;
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(data[i + k]);
      valid = k == 1 ? next >= low_bound && next <= high_bound : (next & 0xC0) == 0x80;
    }
    if (valid) {
      i += length;
    } else {
      data[i++] = '?';
      ++replaced;
    }
  }
  return replaced;
}

// Fast key test on the raw (escaped) key text, which is followed by its closing quote.
template <size_t N>
bool key_is(const char* raw_key, const char (&expected)[N]) {
  return std::memcmp(raw_key, expected, N - 1) == 0 && raw_key[N - 1] == '"';
}

inline bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline size_t skip_space(const char* data, size_t size, size_t pos) {
  while (pos < size && is_json_space(data[pos])) ++pos;
  return pos;
}

// pos is at an opening quote; returns the position after the closing quote, or kNotFound.
inline size_t skip_string(const char* data, size_t size, size_t pos) {
  for (++pos; pos < size; ++pos) {
    if (data[pos] == '\\') {
      ++pos;
    } else if (data[pos] == '"') {
      return pos + 1;
    }
  }
  return kNotFound;
}

// pos is at the first byte of a value; returns the position after it, or kNotFound when the bytes end
// first. Scalars end at the next structural byte. Brackets are not checked for matching kinds.
inline size_t skip_value(const char* data, size_t size, size_t pos) {
  if (pos >= size) return kNotFound;
  char first = data[pos];
  if (first == '"') return skip_string(data, size, pos);
  if (first != '{' && first != '[') {
    while (pos < size && data[pos] != ',' && data[pos] != '}' && data[pos] != ']' && !is_json_space(data[pos])) {
      ++pos;
    }
    return pos;
  }
  size_t depth = 0;
  while (pos < size) {
    char c = data[pos];
    if (c == '"') {
      pos = skip_string(data, size, pos);
      if (pos == kNotFound) return kNotFound;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return pos + 1;
    }
    ++pos;
  }
  return kNotFound;
}

// The next plausible start of an event after `pos`: a '{' that begins a line, or that follows "}," —
// how both pretty-printed and minified writers separate events. kNotFound when there is none.
inline size_t find_event_start(const char* data, size_t size, size_t pos) {
  for (size_t i = pos; i < size; ++i) {
    if (data[i] != '{') continue;
    size_t j = i;
    while (j > pos && (data[j - 1] == ' ' || data[j - 1] == '\t')) --j;
    if (j > pos && (data[j - 1] == '\n' || data[j - 1] == '\r')) return i;
    if (j > pos && data[j - 1] == ',') {
      size_t k = j - 1;
      while (k > pos && is_json_space(data[k - 1])) --k;
      if (k > pos && data[k - 1] == '}') return i;
    }
  }
  return kNotFound;
}

// The next `"key"` after `pos` that is the first thing on its line and followed by ':' (where a writer
// puts a top-level key such as "traceEvents"), or kNotFound. Used when a broken value before it (an
// unescaped quote inverts every later string) hides where the value ends.
inline size_t find_key_line(const char* data, size_t size, size_t pos, std::string_view key) {
  const std::string_view text(data, size);
  for (size_t at = text.find(key, pos); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if (at == 0 || data[at - 1] != '"' || at + key.size() >= size || data[at + key.size()] != '"') continue;
    size_t line = at - 1;
    while (line > pos && (data[line - 1] == ' ' || data[line - 1] == '\t')) --line;
    if (line == 0 || (data[line - 1] != '\n' && data[line - 1] != '\r')) continue;
    const size_t colon = skip_space(data, size, at + key.size() + 1);
    if (colon < size && data[colon] == ':') return at - 1;
  }
  return kNotFound;
}

// Where the event at `start` ends, and where the next one starts. An unescaped quote inside an event (a
// known profiler quirk) inverts every later string, so its closing brace may never be found; a cut file
// ends inside its last event the same way. The two differ in whether another event follows: `end` is
// kNotFound in both cases and `next_start` tells them apart. Usually the event ends before the next line
// that starts an event, and the scan stops there; only events spanning such lines are scanned further,
// and those longer scans share `scan_budget` (bytes; a few times the input): garbage full of unclosed
// braces would otherwise make every event scan to the end of the input, quadratic in its size.
struct EventExtent {
  size_t end = kNotFound;
  size_t next_start = kNotFound;
};

inline EventExtent event_extent(const char* data, size_t size, size_t start, size_t& scan_budget) {
  EventExtent extent;
  extent.next_start = find_event_start(data, size, start + 1);
  if (extent.next_start != kNotFound) {
    extent.end = skip_value(data, extent.next_start, start);
    if (extent.end != kNotFound || scan_budget == 0) return extent;
  }
  const size_t limit = size - start > scan_budget ? start + scan_budget : size;
  extent.end = skip_value(data, limit, start);
  const size_t scanned = (extent.end == kNotFound ? limit : extent.end) - start;
  scan_budget -= std::min(scan_budget, scanned);
  if (extent.end == kNotFound && limit < size && extent.next_start == kNotFound) {
    extent.end = skip_value(data, size, start);  // the last event: a cut file must still be told apart
  }
  return extent;
}

}  // namespace ptadvise::detail
