// The decoded args of a timeline (arg_store.h) and the Timeline lookups built on them.
#include "ptadvise/arg_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "arg_encoding.h"
#include "numbers.h"
#include "ptadvise/timeline.h"

namespace ptadvise {

namespace {
constexpr size_t kPageBytes = size_t{1} << 20;
}

uint64_t TextPool::hash(std::string_view text) { return std::hash<std::string_view>{}(text); }

void TextPool::grow_table() {
  std::vector<uint32_t> slots(std::max<size_t>(64, slots_.size() * 2), 0);
  const size_t mask = slots.size() - 1;
  for (uint32_t id = 0; id < views_.size(); ++id) {
    size_t at = hash(views_[id]) & mask;
    while (slots[at] != 0) at = (at + 1) & mask;
    slots[at] = id + 1;
  }
  slots_ = std::move(slots);
}

uint32_t TextPool::find(std::string_view text) const {
  if (slots_.empty()) return kNone;
  const size_t mask = slots_.size() - 1;
  for (size_t at = hash(text) & mask;; at = (at + 1) & mask) {
    const uint32_t slot = slots_[at];
    if (slot == 0) return kNone;
    if (views_[slot - 1] == text) return slot - 1;
  }
}

uint32_t TextPool::intern(std::string_view text) {
  if ((views_.size() + 1) * 2 > slots_.size()) grow_table();
  const size_t mask = slots_.size() - 1;
  size_t at = hash(text) & mask;
  for (;; at = (at + 1) & mask) {
    const uint32_t slot = slots_[at];
    if (slot == 0) break;
    if (views_[slot - 1] == text) return slot - 1;
  }
  const char* stored = "";
  if (!text.empty()) {
    if (text.size() > kPageBytes / 4) {  // large texts get a page of their own
      auto& page = large_.emplace_back(std::make_unique<char[]>(text.size()));
      std::memcpy(page.get(), text.data(), text.size());
      stored = page.get();
    } else {
      if (page_size_ - page_used_ < text.size()) {
        // Pages grow from 16 KiB: most pools (one per window of the event list) stay small.
        page_size_ = std::min(kPageBytes, std::max(page_size_ * 2, std::max<size_t>(size_t{16} << 10, text.size())));
        pages_.push_back(std::unique_ptr<char[]>(new char[page_size_]));
        page_used_ = 0;
      }
      char* page = pages_.back().get() + page_used_;
      std::memcpy(page, text.data(), text.size());
      page_used_ += text.size();
      stored = page;
    }
  }
  const auto id = static_cast<uint32_t>(views_.size());
  views_.emplace_back(stored, text.size());
  slots_[at] = id + 1;
  return id;
}

void ArgStore::add_block(Block block, const TextPool& local_keys, const TextPool& local_values) {
  block.keys.resize(local_keys.size());
  for (uint32_t k = 0; k < local_keys.size(); ++k) block.keys[k] = keys_.intern(local_keys.view(k));
  block.values.resize(local_values.size());
  for (uint32_t v = 0; v < local_values.size(); ++v) block.values[v] = values_.intern(local_values.view(v));
  block.bytes.shrink_to_fit();
  block.begin.shrink_to_fit();
  blocks_.push_back(std::move(block));
}

size_t ArgStore::memory_bytes() const {
  size_t total = 0;
  for (const Block& block : blocks_) total += block.bytes.capacity() + block.begin.capacity() * 4;
  return total;
}

ArgStore::Record ArgStore::record_of(uint32_t event) const {
  auto it = std::upper_bound(blocks_.begin(), blocks_.end(), event,
                             [](uint32_t e, const Block& block) { return e < block.first_event; });
  if (it == blocks_.begin()) return {};
  const Block& block = *(it - 1);
  const uint32_t local = event - block.first_event;
  if (local + 1 >= block.begin.size()) return {};
  return {&block, block.bytes.data() + block.begin[local], block.bytes.data() + block.begin[local + 1]};
}

const uint8_t* ArgStore::decode(const Block& block, const uint8_t* at, KeyId& key, Value& value) const {
  uint64_t head = 0;
  at = detail::read_varint(at, head);
  key = block.keys[head >> 2];
  value.type = static_cast<Type>(head & 3);
  uint64_t payload = 0;
  switch (value.type) {
    case Type::Int:
      at = detail::read_varint(at, payload);
      value.number = detail::unzigzag(payload);
      break;
    case Type::String:
    case Type::Raw:
      at = detail::read_varint(at, payload);
      value.text = values_.view(block.values[payload]);
      break;
    case Type::Null:
      break;
  }
  return at;
}

bool ArgStore::find(uint32_t event, KeyId key, Value& value) const {
  if (key == kNone) return false;
  const Record record = record_of(event);
  for (const uint8_t* at = record.begin; at < record.end;) {
    KeyId found = 0;
    at = decode(*record.block, at, found, value);
    if (found == key) return true;
  }
  return false;
}

bool ArgStore::empty(uint32_t event) const {
  const Record record = record_of(event);
  return record.begin == record.end;
}

// ---- Timeline lookups ------------------------------------------------------------------------------------

namespace {

// args[key] as the lookups see it: absent or null is nothing.
bool lookup(const Timeline& timeline, EventIndex i, std::string_view key, ArgStore::Value& value) {
  if (i >= timeline.events.size()) return false;
  return timeline.args.find(i, timeline.args.key(key), value) && value.type != ArgStore::Type::Null;
}

}  // namespace

bool Timeline::has_args(EventIndex i) const { return i < events.size() && !args.empty(i); }

std::optional<int64_t> Timeline::arg_int(EventIndex i, std::string_view key) const {
  ArgStore::Value value;
  if (!lookup(*this, i, key, value)) return std::nullopt;
  if (value.type == ArgStore::Type::Int) return value.number;
  int64_t number = 0;
  if (detail::parse_int_token(value.text, number)) return number;
  return std::nullopt;
}

std::optional<double> Timeline::arg_double(EventIndex i, std::string_view key) const {
  ArgStore::Value value;
  if (!lookup(*this, i, key, value)) return std::nullopt;
  if (value.type == ArgStore::Type::Int) return static_cast<double>(value.number);  // both round to nearest
  const std::string text(value.text);
  if (text.empty() || text.front() == '{' || text.front() == '[' || text == "true" || text == "false") {
    return std::nullopt;
  }
  char* end = nullptr;
  double number = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return number;
}

std::optional<std::string> Timeline::arg_string(EventIndex i, std::string_view key) const {
  ArgStore::Value value;
  if (!lookup(*this, i, key, value)) return std::nullopt;
  if (value.type == ArgStore::Type::Int) return std::to_string(value.number);
  return std::string(value.text);
}

std::string Timeline::args_json(EventIndex i) const {
  if (i >= events.size()) return {};
  std::string out;
  auto quoted = [&out](std::string_view text) {
    out += '"';
    for (char c : text) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char escape[8];
        std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(c));
        out += escape;
      } else {
        out += c;
      }
    }
    out += '"';
  };
  args.for_each(i, [&](std::string_view key, const ArgStore::Value& value) {
    out += out.empty() ? "{" : ", ";
    quoted(key);
    out += ": ";
    switch (value.type) {
      case ArgStore::Type::Int: out += std::to_string(value.number); break;
      case ArgStore::Type::String: quoted(value.text); break;
      case ArgStore::Type::Raw: out += value.text; break;
      case ArgStore::Type::Null: out += "null"; break;
    }
  });
  out += out.empty() ? "{}" : "}";
  return out;
}

}  // namespace ptadvise
