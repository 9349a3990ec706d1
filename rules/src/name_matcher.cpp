#include "name_matcher.h"

#include <re2/re2.h>
#include <string.h>  // memmem

#include "ptadvise/bad_alloc_shield.h"

namespace ptadvise {

namespace {

// A piece of a glob without '*' against text of the same length ('?' matches any one byte).
bool piece_equal(std::string_view piece, std::string_view text) {
  for (size_t i = 0; i < piece.size(); ++i) {
    if (piece[i] != '?' && piece[i] != text[i]) return false;
  }
  return true;
}

// The leftmost occurrence of a piece in text at or after `from`. Pieces without '?' use memmem (glibc's
// two-way search: linear whatever the bytes).
size_t find_piece(std::string_view piece, std::string_view text, size_t from) {
  if (from + piece.size() > text.size()) return std::string_view::npos;
  if (piece.find('?') == std::string_view::npos) {
    const void* found = memmem(text.data() + from, text.size() - from, piece.data(), piece.size());
    return found == nullptr ? std::string_view::npos : static_cast<size_t>(static_cast<const char*>(found) - text.data());
  }
  for (size_t at = from; at + piece.size() <= text.size(); ++at) {
    if (piece_equal(piece, text.substr(at, piece.size()))) return at;
  }
  return std::string_view::npos;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // The pieces between stars: the first is anchored at the start, the last at the end, and each middle one
  // is taken at its leftmost occurrence after the previous one (a later occurrence would only leave less
  // text for the rest). One pass over the text per piece search, no backtracking.
  const size_t first_star = pattern.find('*');
  if (first_star == std::string_view::npos) return pattern.size() == text.size() && piece_equal(pattern, text);
  const size_t last_star = pattern.rfind('*');
  const std::string_view head = pattern.substr(0, first_star);
  const std::string_view tail = pattern.substr(last_star + 1);
  if (text.size() < head.size() + tail.size()) return false;
  if (!piece_equal(head, text.substr(0, head.size()))) return false;
  if (!piece_equal(tail, text.substr(text.size() - tail.size()))) return false;
  const std::string_view middle_text = text.substr(head.size(), text.size() - head.size() - tail.size());
  std::string_view middle = pattern.substr(first_star + 1, last_star - first_star - (last_star > first_star ? 1 : 0));
  if (last_star == first_star) middle = {};
  size_t pos = 0;
  while (!middle.empty()) {
    const size_t star = middle.find('*');
    const std::string_view piece = middle.substr(0, star);
    middle = star == std::string_view::npos ? std::string_view{} : middle.substr(star + 1);
    if (piece.empty()) continue;
    const size_t found = find_piece(piece, middle_text, pos);
    if (found == std::string_view::npos) return false;
    pos = found + piece.size();
  }
  return true;
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
  // RE2 is not exception-safe: calls into it run in a shield (a failed allocation must not unwind it).
  auto regex = without_bad_alloc_inside([&] { return std::make_unique<RE2>(pattern, options); });
  if (!regex->ok()) return regex->error();
  regexes_.push_back(std::move(regex));
  return {};
}

bool NameMatcher::matches(std::string_view text) const {
  for (const auto& glob : globs_) {
    if (glob_match(glob, text)) return true;
  }
  if (regexes_.empty()) return false;
  BadAllocShield shield;  // RE2 is not exception-safe (its DFA allocates as it matches)
  const re2::StringPiece piece(text.data(), text.size());
  for (const auto& regex : regexes_) {
    if (RE2::PartialMatch(piece, *regex)) return true;
  }
  return false;
}

}  // namespace ptadvise
