// What a terminal or a CI log must never receive from a trace: raw control characters, and lines that a
// CI runner would execute as a log command (GitHub: a line starting with `::cmd`, after white space, or
// `##[cmd]` anywhere; Azure `##vso[`; TeamCity `##teamcity[`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ptadvise::testing {

// Problems found in `text`, one entry each ("line 3: ..."). Our own GitHub annotations (a line that
// starts `::error file=`, `::warning file=` or `::notice ` in column 0) are allowed when `github`.
inline std::vector<std::string> ci_log_problems(std::string_view text, bool github = false) {
  std::vector<std::string> problems;
  size_t number = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++number;
    const std::string where = "line " + std::to_string(number) + ": " + std::string(line.substr(0, 160));
    for (char c : line) {
      auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7F) {
        problems.push_back(where + " (control character " + std::to_string(u) + ")");
        break;
      }
    }
    if (line.find("\xc2\x9b") != std::string_view::npos) problems.push_back(where + " (C1 CSI)");
    for (const char* marker : {"##[", "##vso[", "##teamcity["}) {
      if (line.find(marker) != std::string_view::npos) problems.push_back(where + " (" + marker + " command)");
    }
    std::string_view trimmed = line.substr(std::min(line.size(), line.find_first_not_of(" \t")));
    if (trimmed.substr(0, 2) == "::") {
      const bool ours = github && trimmed.size() == line.size() &&
                        (line.starts_with("::error file=") || line.starts_with("::warning file=") ||
                         line.starts_with("::notice "));
      if (!ours) problems.push_back(where + " (a `::` log command)");
    }
    start = end + 1;
  }
  return problems;
}

// For the fuzz harnesses: a problem is a finding (libFuzzer reports the trap and keeps the input).
inline void trap_unless_ci_log_safe(std::string_view text, bool github = false) {
  if (!ci_log_problems(text, github).empty()) __builtin_trap();
}

}  // namespace ptadvise::testing
