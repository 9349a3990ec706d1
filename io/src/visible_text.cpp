#include "ptadvise/visible_text.h"

#include <cstdio>

namespace ptadvise {
namespace {

void append_escape(std::string& out, const char* format, unsigned value) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, format, value);
  out += buffer;
}

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n'; }

// "##" followed by letters and '[': a log command of GitHub (##[error]), Azure (##vso[) or TeamCity.
bool starts_log_command(std::string_view text, size_t i) {
  if (text.compare(i, 2, "##") != 0) return false;
  size_t k = i + 2;
  while (k < text.size() && ((text[k] >= 'a' && text[k] <= 'z') || (text[k] >= 'A' && text[k] <= 'Z'))) ++k;
  return k < text.size() && text[k] == '[';
}

}  // namespace

std::string visible_text(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {  // U+0080..U+009F, the C1 controls (CSI is U+009B)
      append_escape(out, "\\u%04x", static_cast<unsigned char>(text[++i]));
    } else if ((u < 0x20 && !(keep_newlines && (u == '\n' || u == '\t'))) || u == 0x7F) {
      append_escape(out, "\\x%02x", u);
    } else if (u == ':' && i + 1 < text.size() && text[i + 1] == ':' &&
               (i == 0 || is_space(static_cast<unsigned char>(text[i - 1])))) {
      out += ":\\x3a";
      ++i;
    } else if (starts_log_command(text, i)) {
      out += "#\\x23";
      ++i;
    } else {
      out += static_cast<char>(u);
    }
  }
  return out;
}

}  // namespace ptadvise
