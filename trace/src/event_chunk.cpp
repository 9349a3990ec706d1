// The event chunk's setup outside the parse loop (event_chunk.h): which args keys may be kept, the string
// table's rehash, the columns' reservations. The per-event paths (ArgKeyFilter::keeps, StringTable::intern)
// stay in event_parser.cpp, in the parser's translation unit, where they can be inlined.
#include <algorithm>
#include <cstdint>

#include "event_chunk.h"

namespace ptadvise::detail {

namespace {

bool needs_escape(char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; }

}  // namespace

ArgKeyFilter::ArgKeyFilter(const ArgKeySet& keys) : keys_(keys) {
  // A key as written starts with its first two characters, or with an escape ('\\') at one of them (any
  // character may be escaped, and some must be): those byte pairs pass may_keep().
  for (unsigned second = 0; second < 256; ++second) mark('\\', static_cast<unsigned char>(second));
  shortest_.fill(SIZE_MAX);
  for (const std::string& key : keys) {
    if (!key.empty()) {
      auto& shortest = shortest_[static_cast<unsigned char>(key[0])];
      shortest = std::min(shortest, key.size());
    }
    if (std::none_of(key.begin(), key.end(), needs_escape)) {
      // The empty key is written "": its first byte as written is the closing quote.
      by_first_[key.empty() ? '"' : static_cast<unsigned char>(key[0])].push_back(key);
    }
    if (key.empty()) {
      for (unsigned second = 0; second < 256; ++second) mark('"', static_cast<unsigned char>(second));
      continue;
    }
    if (needs_escape(key[0])) continue;  // written with '\\' first
    const auto first = static_cast<unsigned char>(key[0]);
    mark(first, '\\');
    if (key.size() == 1) {
      mark(first, '"');
    } else if (!needs_escape(key[1])) {
      mark(first, static_cast<unsigned char>(key[1]));
    }
  }
}

void StringTable::grow() {
  std::vector<uint32_t> slots(std::max<size_t>(64, slots_.size() * 2), 0);
  const size_t mask = slots.size() - 1;
  for (uint32_t id = 0; id < views_.size(); ++id) {
    size_t at = std::hash<std::string_view>{}(views_[id]) & mask;
    while (slots[at] != 0) at = (at + 1) & mask;
    slots[at] = id + 1;
  }
  slots_ = std::move(slots);
}

void EventChunk::reserve(size_t events) {
  ts_ns.reserve(events);
  dur_ns.reserve(events);
  kind.reserve(events);
  name.reserve(events);
  category.reserve(events);
  track.reserve(events);
  correlation.reserve(events);
  external_id.reserve(events);
  args_offset.reserve(events);
  args_length.reserve(events);
}

}  // namespace ptadvise::detail
