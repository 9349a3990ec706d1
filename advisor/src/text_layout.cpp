// Column counting and word wrapping for the text report (text_layout.h).
#include "text_layout.h"

#include <algorithm>
#include <sstream>
#include <vector>

namespace ptadvise::text {

size_t columns(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

void wrapped(std::ostream& out, const std::string& prefix, size_t prefix_columns, std::string_view body,
             size_t width, size_t indent) {
  out << prefix;
  size_t column = prefix_columns;
  const size_t min_room = 20;  // never wrap into a sliver
  width = std::max(width, indent + min_room);
  size_t pos = 0;
  bool line_start = true;
  while (pos < body.size()) {
    size_t space = body.find(' ', pos);
    std::string_view word = body.substr(pos, space == std::string_view::npos ? std::string_view::npos : space - pos);
    pos = space == std::string_view::npos ? body.size() : space + 1;
    if (word.empty()) continue;
    size_t word_columns = columns(word);
    const bool fits_next_line = indent + word_columns <= width;
    if ((!line_start && column + 1 + word_columns > width) ||
        (line_start && column > indent && column + word_columns > width && fits_next_line)) {
      out << "\n" << std::string(indent, ' ');
      column = indent;
      line_start = true;
    }
    if (!line_start) {
      out << ' ';
      ++column;
    }
    // A word wider than the room left on an empty line: split it over lines.
    while (column + word_columns > width && width > column) {
      size_t room = width - column, taken = 0, bytes = 0;
      while (bytes < word.size() && taken < room) {
        ++bytes;
        while (bytes < word.size() && (static_cast<unsigned char>(word[bytes]) & 0xC0) == 0x80) ++bytes;
        ++taken;
      }
      // A continuation line never starts with "::" (a CI log would read `::error ...` there as a command):
      // the split moves back before the colons, or between them.
      auto colons_next = [&] { return bytes + 1 < word.size() && word[bytes] == ':' && word[bytes + 1] == ':'; };
      while (colons_next() && bytes > 1 && static_cast<unsigned char>(word[bytes - 1]) < 0x80) {
        --bytes;
        --taken;
      }
      while (colons_next()) {
        ++bytes;
        ++taken;
      }
      out << word.substr(0, bytes) << "\n" << std::string(indent, ' ');
      word.remove_prefix(bytes);
      word_columns -= taken;
      column = indent;
    }
    out << word;
    column += word_columns;
    line_start = false;
  }
  out << "\n";
}

size_t wrapped_lines(size_t prefix_columns, std::string_view body, size_t width, size_t indent) {
  std::ostringstream out;
  wrapped(out, std::string(prefix_columns, ' '), prefix_columns, body, width, indent);
  const std::string text = out.str();
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace ptadvise::text
