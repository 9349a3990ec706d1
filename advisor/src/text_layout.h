// Terminal text for the text report (private to advisor/): colours, columns, wrapping. Lines are wrapped
// at spaces (nothing is cut); a word longer than a line is split between characters.
#pragma once

#include <fmt/color.h>

#include <ostream>
#include <string>
#include <string_view>

#include "ptadvise/advisor.h"

namespace ptadvise::text {

struct Palette {
  bool on = false;
  std::string paint(std::string_view text, fmt::text_style style) const {
    if (!on) return std::string(text);
    return fmt::format(style, "{}", text);
  }
  std::string severity(Severity s) const {
    auto color = s == Severity::Error ? fmt::terminal_color::red
                 : s == Severity::Warning ? fmt::terminal_color::yellow
                                          : fmt::terminal_color::cyan;
    return paint(to_string(s), fmt::emphasis::bold | fmt::fg(color));
  }
  std::string bold(std::string_view text) const { return paint(text, fmt::emphasis::bold); }
  std::string blue(std::string_view text) const { return paint(text, fmt::emphasis::bold | fmt::fg(fmt::terminal_color::blue)); }
  std::string green(std::string_view text) const { return paint(text, fmt::emphasis::bold | fmt::fg(fmt::terminal_color::green)); }
};

// Columns a UTF-8 string takes (one per code point; the names we print are not wide characters).
size_t columns(std::string_view text);

// Writes `prefix` (already painted; `prefix_columns` wide) and `body` wrapped at spaces to `width`
// columns; continuation lines start with `indent` spaces.
void wrapped(std::ostream& out, const std::string& prefix, size_t prefix_columns, std::string_view body, size_t width,
             size_t indent);

using ptadvise::elide_middle;  // finding.h: names lose their middle, numbers never

// How many lines `wrapped` writes for the same arguments.
size_t wrapped_lines(size_t prefix_columns, std::string_view body, size_t width, size_t indent);

// The default layout of one finding: at most four lines at 80 columns (layout in print_text_finding.cpp).
void print_finding_default(const Finding& f, std::ostream& out, const Palette& p, size_t width);

}  // namespace ptadvise::text
