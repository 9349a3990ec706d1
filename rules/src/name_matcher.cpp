#include "name_matcher.h"

#include <re2/re2.h>

namespace ptadvise {

bool glob_match(std::string_view pattern, std::string_view text) {
  // Greedy matching with a single backtrack point: linear in |pattern| * |text| at worst, no recursion.
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

NameMatcher::NameMatcher() = default;
NameMatcher::~NameMatcher() = default;
NameMatcher::NameMatcher(NameMatcher&&) noexcept = default;
NameMatcher& NameMatcher::operator=(NameMatcher&&) noexcept = default;

void NameMatcher::add_glob(std::string pattern) { globs_.push_back(std::move(pattern)); }

std::string NameMatcher::add_regex(const std::string& pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(8 << 20);  // user-supplied patterns: bound the DFA memory
  auto regex = std::make_unique<RE2>(pattern, options);
  if (!regex->ok()) return regex->error();
  regexes_.push_back(std::move(regex));
  return {};
}

bool NameMatcher::matches(std::string_view text) const {
  for (const auto& glob : globs_) {
    if (glob_match(glob, text)) return true;
  }
  for (const auto& regex : regexes_) {
    if (RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *regex)) return true;
  }
  return false;
}

}  // namespace ptadvise
