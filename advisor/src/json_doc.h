// JSON documents of the printers, built with nlohmann::json (Debian's nlohmann-json3-dev) and written
// by its serializer: one writer and one escaper for every JSON output (private to advisor/).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

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
  const std::string raw = document.dump(indent, ' ', false, Json::error_handler_t::replace);
  std::string text;
  text.reserve(raw.size());
  // All of these occur only inside strings; C0 controls are \u escapes already.
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto u = static_cast<unsigned char>(raw[i]);
    const auto next = i + 1 < raw.size() ? static_cast<unsigned char>(raw[i + 1]) : 0;
    if (u == 0x7F) {
      text += "\\u007f";
    } else if (u == 0xC2 && next >= 0x80 && next <= 0x9F) {
      text += next < 0x90 ? "\\u008" : "\\u009";
      text += "0123456789abcdef"[next & 0x0F];
      ++i;
    } else if (u == '#' && next == '#') {
      size_t k = i + 2;
      while (k < raw.size() && ((raw[k] >= 'a' && raw[k] <= 'z') || (raw[k] >= 'A' && raw[k] <= 'Z'))) ++k;
      text += '#';
      if (k < raw.size() && raw[k] == '[') {
        text += "\\u0023";
        ++i;
      }
    } else {
      text += static_cast<char>(u);
    }
  }
  return text;
}

inline void write(std::ostream& out, const Json& document) { out << dump(document) << "\n"; }

}  // namespace ptadvise::jsondoc
