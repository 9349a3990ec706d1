#include "ptadvise/timeline.h"

namespace ptadvise {

StringPool::StringPool() { intern(""); }

StringPool::StringPool(const StringPool& other) : storage_(other.storage_) {
  views_.reserve(storage_.size());
  for (const std::string& stored : storage_) {
    auto id = static_cast<StringId>(views_.size());
    ids_.emplace(views_.emplace_back(stored), id);
  }
}

StringPool& StringPool::operator=(const StringPool& other) {
  if (this != &other) *this = StringPool(other);
  return *this;
}

StringId StringPool::intern(std::string_view text) {
  if (auto it = ids_.find(text); it != ids_.end()) return it->second;
  const std::string& stored = storage_.emplace_back(text);
  auto id = static_cast<StringId>(views_.size());
  views_.emplace_back(stored);
  ids_.emplace(views_.back(), id);
  return id;
}

StringId StringPool::find(std::string_view text) const {
  auto it = ids_.find(text);
  return it == ids_.end() ? kNone : it->second;
}

}  // namespace ptadvise
