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
// (names from traces) become U+FFFD instead of failing the whole output.
inline std::string dump(const Json& document, int indent = 2) {
  return document.dump(indent, ' ', false, Json::error_handler_t::replace);
}

inline void write(std::ostream& out, const Json& document) { out << dump(document) << "\n"; }

}  // namespace ptadvise::jsondoc
