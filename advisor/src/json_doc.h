// JSON documents of the printers, built with nlohmann::json (Debian's nlohmann-json3-dev) and written
// by its serializer: one writer and one escaper for every JSON output (private to advisor/). Its
// destructor is noexcept but allocates (a stack that frees nested values without recursion): documents
// are built and destroyed inside a BadAllocShield, where a failed allocation does not throw.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

namespace ptadvise::jsondoc {

// Keys keep the order they are set in, so documents read top-down as before.
using Json = nlohmann::ordered_json;

// A figure rounded to `decimals`; whole values are written as integers ("25", not "25.0"). NaN and
// infinities, which JSON cannot carry, are written as 0.
inline Json number(double value, int decimals) {
  if (!std::isfinite(value)) return 0;
  const double scale = std::pow(10.0, decimals);
  double rounded = std::round(value * scale) / scale;
  if (rounded == 0) return 0;  // no "-0"
  if (std::fabs(rounded) < 9e15 && rounded == std::floor(rounded)) return static_cast<int64_t>(rounded);
  return rounded;
}

// Text of a document: `indent` spaces per level, or one line when negative. Bytes that are not UTF-8
// (names from traces) become U+FFFD instead of failing the whole output. What the serializer leaves raw
// but a terminal or a CI log would act on is written as a \u escape, the same string to every JSON
// reader: DEL, the C1 controls (U+009B is a CSI), and the '#' of a `##[command]` (legacy GitHub, Azure,
// TeamCity; recognised anywhere in a printed line).
inline std::string dump(const Json& document, int indent = 2) {
  std::string raw = document.dump(indent, ' ', false, Json::error_handler_t::replace);
  // All of these occur only inside strings; C0 controls are \u escapes already. Most documents hold
  // none, and the bytes between them are copied as runs, not one by one.
  constexpr std::string_view kSpecial("\x7f\xc2#", 3);
  size_t i = raw.find_first_of(kSpecial);
  if (i == std::string::npos) return raw;
  std::string text;
  text.reserve(raw.size() + 16);
  size_t copied = 0;  // raw[copied, i) is still to be copied as it is
  while (i != std::string::npos) {
    const auto u = static_cast<unsigned char>(raw[i]);
    const auto next = i + 1 < raw.size() ? static_cast<unsigned char>(raw[i + 1]) : 0;
    if (u == 0x7F) {
      text.append(raw, copied, i - copied);
      text += "\\u007f";
      copied = ++i;
    } else if (u == 0xC2 && next >= 0x80 && next <= 0x9F) {
      text.append(raw, copied, i - copied);
      text += next < 0x90 ? "\\u008" : "\\u009";
      text += "0123456789abcdef"[next & 0x0F];
      copied = i += 2;
    } else if (u == '#' && next == '#') {
      size_t k = i + 2;
      while (k < raw.size() && ((raw[k] >= 'a' && raw[k] <= 'z') || (raw[k] >= 'A' && raw[k] <= 'Z'))) ++k;
      if (k < raw.size() && raw[k] == '[') {  // "##cmd[": the first '#' stays, the second is escaped
        text.append(raw, copied, i + 1 - copied);
        text += "\\u0023";
        copied = i += 2;
      } else {
        ++i;  // the second '#' may begin a "##cmd[" of its own
      }
    } else {
      ++i;
    }
    i = raw.find_first_of(kSpecial, i);
  }
  text.append(raw, copied, std::string::npos);
  return text;
}

inline void write(std::ostream& out, const Json& document) { out << dump(document) << "\n"; }

}  // namespace ptadvise::jsondoc
