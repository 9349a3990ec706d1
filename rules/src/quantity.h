// Internal to rules/: numbers with units as written in rule files ("1MiB", "10us", "2.5").
#pragma once

#include <optional>
#include <string_view>

namespace ptadvise {

enum class QuantityKind {
  Plain,     // a bare number
  Duration,  // a number with a unit ns, us, ms or s; the value is in ns
  Any,       // a bare number or a byte size (B, KB, MB, GB, KiB, MiB, GiB); the value is in bytes
};

std::optional<double> parse_quantity(std::string_view text, QuantityKind kind);

}  // namespace ptadvise
