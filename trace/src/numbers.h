// Internal to trace/: exact parsing of the numbers traces write, from their raw JSON token text.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <string>
#include <string_view>

#include "json_scan.h"

namespace ptadvise::detail {

// A name cut to `limit` characters (the last three "..."), for messages.
inline std::string shorten(std::string_view name, size_t limit) {
  if (name.size() <= limit) return std::string(name);
  return std::string(name.substr(0, limit - 3)) + "...";
}

// 1234567 -> "1,234,567", for the byte counts of warnings.
inline std::string with_commas(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Timestamps beyond ±2^61 ns (73 years) are rejected so that a difference of two never overflows.
inline constexpr int64_t kMaxTimeNs = int64_t{1} << 61;
// Sums over many events need more: an event starting or ending further than 2^46 ns (19.5 hours) from the
// median time of the trace's events is malformed (no profile spans days; a stray clock does), and the
// durations of all events together may not pass 2^54 ns (208 days). Then any sum of durations, and any
// sum of per-thread or per-device spans over up to 2^16 threads or devices, stays below 2^63.
inline constexpr int64_t kMaxDistanceNs = int64_t{1} << 46;
inline constexpr int64_t kMaxTotalDurationNs = int64_t{1} << 54;

// Strips trailing whitespace and, when present, the quotes of a string token ("123.456" is accepted
// where a number is expected). Returns false for an unterminated string.
inline bool unquote_token(std::string_view& token) {
  while (!token.empty() && is_json_space(token.back())) token.remove_suffix(1);
  if (!token.empty() && token.front() == '"') {
    if (token.size() < 2 || token.back() != '"') return false;
    token = token.substr(1, token.size() - 2);
  }
  return !token.empty();
}

// Microseconds as written ("1610366662254362", "88511388202.755", "\"123.456\"", "1.5e3") to integer
// nanoseconds. Decimal digits are converted exactly; a 4th decimal rounds half up; exponents go
// through double. False when the token is not a number or out of range.
inline bool parse_time_ns(std::string_view token, int64_t& out) {
  if (!unquote_token(token)) return false;
  size_t i = 0;
  bool negative = false;
  if (token[i] == '-') {
    negative = true;
    ++i;
  }
  const size_t digits_start = i;
  uint64_t whole = 0;
  constexpr uint64_t kMaxWholeUs = static_cast<uint64_t>(kMaxTimeNs) / 1000;
  while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
    whole = whole * 10 + static_cast<uint64_t>(token[i] - '0');
    if (whole > kMaxWholeUs) return false;
    ++i;
  }
  if (i == digits_start) return false;
  uint64_t fraction_ns = 0;
  if (i < token.size() && token[i] == '.') {
    ++i;
    const size_t fraction_start = i;
    int taken = 0;
    bool round_up = false;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
      if (taken < 3) {
        fraction_ns = fraction_ns * 10 + static_cast<uint64_t>(token[i] - '0');
        ++taken;
      } else if (taken == 3) {
        round_up = token[i] >= '5';
        ++taken;
      }
      ++i;
    }
    if (i == fraction_start) return false;
    for (; taken < 3; ++taken) fraction_ns *= 10;
    if (round_up) ++fraction_ns;
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    if (token.size() > 64) return false;
    std::string copy(token);
    char* end = nullptr;
    double us = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(us)) return false;
    double ns = std::round(us * 1000.0);
    if (std::fabs(ns) >= static_cast<double>(kMaxTimeNs)) return false;
    out = static_cast<int64_t>(ns);
    return true;
  }
  if (i != token.size()) return false;
  auto magnitude = static_cast<int64_t>(whole * 1000 + fraction_ns);
  out = negative ? -magnitude : magnitude;
  return true;
}

// An integer id or count ("42", "\"42\"", "42.0"). False when not an integer or beyond int64 (such
// as NCCL `Comms Id` values above 2^63).
inline bool parse_int_token(std::string_view token, int64_t& out) {
  if (!unquote_token(token)) return false;
  size_t i = 0;
  bool negative = false;
  if (token[i] == '-') {
    negative = true;
    ++i;
  }
  const size_t digits_start = i;
  uint64_t value = 0;
  constexpr uint64_t kLimit = static_cast<uint64_t>(INT64_MAX);
  while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
    auto digit = static_cast<uint64_t>(token[i] - '0');
    if (value > (kLimit - digit) / 10) return false;
    value = value * 10 + digit;
    ++i;
  }
  if (i == digits_start) return false;
  if (i < token.size() && token[i] == '.') {  // integral decimals only
    ++i;
    while (i < token.size() && token[i] == '0') ++i;
  }
  if (i != token.size()) return false;
  out = negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
  return true;
}

}  // namespace ptadvise::detail
