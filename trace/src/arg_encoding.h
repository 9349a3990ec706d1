// Internal to trace/: the byte encoding of an args record (arg_store.h). Per (key, value):
// varint(local key id << 2 | type), then for Int a zigzag varint, for String and Raw a varint local text id.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ptadvise::detail {

inline void write_varint(std::vector<uint8_t>& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

inline const uint8_t* read_varint(const uint8_t* at, uint64_t& value) {
  uint64_t result = 0;
  unsigned shift = 0;
  while (*at & 0x80) {
    result |= static_cast<uint64_t>(*at++ & 0x7F) << shift;
    shift += 7;
  }
  value = result | (static_cast<uint64_t>(*at++) << shift);
  return at;
}

inline uint64_t zigzag(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t unzigzag(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

// A number token written as a plain integer that prints back the same ("-12", never "012", "-0", "1.0" or
// beyond int64): stored as a number, its text is std::to_string of it.
// INT64_MIN is left as text, as parse_int_token refuses it.
inline bool canonical_int(std::string_view token, int64_t& out) {
  size_t i = token.size() > 0 && token[0] == '-' ? 1 : 0;
  const size_t digits = token.size() - i;
  if (digits == 0 || digits > 19) return false;
  if (token[i] == '0' && (digits > 1 || i == 1)) return false;
  uint64_t value = 0;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  const bool negative = token[0] == '-';
  if (value > static_cast<uint64_t>(INT64_MAX)) return false;  // 19 digits fit in uint64
  out = negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  return true;
}

}  // namespace ptadvise::detail
