#include "quantity.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ptadvise {
namespace {

std::optional<double> scale(double value, std::string_view unit, QuantityKind kind) {
  if (kind == QuantityKind::Plain) {
    if (!unit.empty()) return std::nullopt;
    return value;
  }
  if (kind == QuantityKind::Duration) {
    if (unit == "ns") return value;
    if (unit == "us") return value * 1e3;
    if (unit == "ms") return value * 1e6;
    if (unit == "s") return value * 1e9;
    return std::nullopt;
  }
  if (unit.empty() || unit == "B") return value;
  if (unit == "KB") return value * 1e3;
  if (unit == "MB") return value * 1e6;
  if (unit == "GB") return value * 1e9;
  if (unit == "KiB") return value * 1024.0;
  if (unit == "MiB") return value * 1024.0 * 1024.0;
  if (unit == "GiB") return value * 1024.0 * 1024.0 * 1024.0;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_quantity(std::string_view text, QuantityKind kind) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                               text[end] == '-' || text[end] == '+' || text[end] == 'e' || text[end] == 'E')) {
    // 'e' only counts as an exponent when a digit or sign follows it.
    if ((text[end] == 'e' || text[end] == 'E') &&
        (end + 1 >= text.size() || !(std::isdigit(static_cast<unsigned char>(text[end + 1])) || text[end + 1] == '-' ||
                                      text[end + 1] == '+'))) {
      break;
    }
    ++end;
  }
  if (end == 0) return std::nullopt;
  std::string number(text.substr(0, end));
  char* parsed_end = nullptr;
  double value = std::strtod(number.c_str(), &parsed_end);
  if (parsed_end != number.c_str() + number.size() || !std::isfinite(value)) return std::nullopt;
  std::string_view unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  const std::optional<double> scaled = scale(value, unit, kind);
  // 1e300 s is finite until it meets its unit: a threshold must still be a finite number after scaling.
  if (!scaled || !std::isfinite(*scaled)) return std::nullopt;
  return scaled;
}

}  // namespace ptadvise

