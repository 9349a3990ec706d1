// Internal to rules/: name patterns (globs or RE2 regexes) and a per-StringId match cache, so that each
// distinct interned name is matched once per pattern however many events carry it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ptadvise/timeline.h"

namespace re2 {
class RE2;
}

namespace ptadvise {

// '*' matches any run of characters, '?' one character; everything else is literal. Linear time.
bool glob_match(std::string_view pattern, std::string_view text);

// Any of several globs, or any of several RE2 regexes (searched, not anchored, unless the regex anchors).
class NameMatcher {
 public:
  NameMatcher();
  ~NameMatcher();
  NameMatcher(NameMatcher&&) noexcept;
  NameMatcher& operator=(NameMatcher&&) noexcept;
  NameMatcher(const NameMatcher&) = delete;
  NameMatcher& operator=(const NameMatcher&) = delete;

  void add_glob(std::string pattern);
  // Returns an error text (RE2's) when the regex does not compile; empty on success.
  std::string add_regex(const std::string& pattern);
  bool matches(std::string_view text) const;
  bool empty() const { return globs_.empty() && regexes_.empty(); }

 private:
  std::vector<std::string> globs_;
  std::vector<std::unique_ptr<re2::RE2>> regexes_;
};

// Memoises NameMatcher::matches per interned name of one timeline.
class NameCache {
 public:
  NameCache(const NameMatcher& matcher, const StringPool& strings)
      : matcher_(&matcher), strings_(&strings), state_(strings.size(), kUnknown) {}
  bool matches(StringId id) {
    if (id >= state_.size()) return matcher_->matches(strings_->view(id));
    if (state_[id] == kUnknown) state_[id] = matcher_->matches(strings_->view(id)) ? kYes : kNo;
    return state_[id] == kYes;
  }

 private:
  static constexpr uint8_t kUnknown = 0, kYes = 1, kNo = 2;
  const NameMatcher* matcher_;
  const StringPool* strings_;
  std::vector<uint8_t> state_;
};

}  // namespace ptadvise
