// Internal to trace/: what the events of one part of the event list say, with string and track ids local
// to that part, so parts can be parsed apart (on any thread) and merged into the timeline in file order.
#pragma once

#include <simdjson.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptadvise/timeline.h"

namespace ptadvise::detail {

// Deduplicated strings with dense ids in order of first use; views stay valid (pages never move).
class StringTable {
 public:
  uint32_t intern(std::string_view text);
  std::string_view view(uint32_t id) const { return views_[id]; }
  size_t size() const { return views_.size(); }

 private:
  void grow();
  std::vector<std::unique_ptr<char[]>> pages_;
  size_t page_used_ = 0, page_size_ = 0;
  std::vector<std::string_view> views_;
  std::vector<uint32_t> slots_;  // id + 1; 0 = empty
};

struct EventChunk {
  EventChunk() { strings.intern(""); }  // local id 0 is the empty string, as in StringPool

  // The stored events, as Events' columns; name, category and track ids are local.
  std::vector<int64_t> ts_ns, dur_ns;
  std::vector<EventKind> kind;
  std::vector<StringId> name, category;
  std::vector<uint32_t> track;
  std::vector<int64_t> correlation, external_id;
  // In the file, as Events::args_offset; with kept keys (ArgKeyFilter), in `args_text` instead.
  std::vector<uint64_t> args_offset;
  std::vector<uint32_t> args_length;
  std::string args_text;  // with kept keys: each event's kept args as a small JSON object, one after another

  StringTable strings;           // local StringId -> text, in order of first use
  std::vector<Track> tracks;  // pid_text, tid_text and name are local string ids
  std::vector<int64_t> flow_correlation;
  struct Name {  // a process_name / thread_name metadata event
    bool thread = false;
    StringId pid = 0, tid = 0, name = 0;
  };
  std::vector<Name> names;

  uint64_t events_seen = 0, malformed_events = 0, negative_durations = 0, unknown_phases = 0, begin_end_events = 0;
  std::unordered_map<StringId, uint64_t> other_events;  // events of kind Other, by local category id
  bool any_category = false;
  std::string first_malformed;  // "byte N: reason" of the first malformed event

  size_t size() const { return ts_ns.size(); }
  bool empty() const { return ts_ns.empty() && events_seen == 0 && names.empty() && flow_correlation.empty(); }
  void reserve(size_t events);
};

// The args keys a ChunkParser keeps (LoadOptions::arg_keys). Most keys of a trace share no first two bytes
// (as written) with a kept key: they cost one bit test (`may_keep`), and only the others are compared.
class ArgKeyFilter {
 public:
  explicit ArgKeyFilter(const ArgKeySet& keys);
  // False when the key written at `raw_key` is surely not kept (reads its first two bytes: the second may
  // be the closing quote).
  bool may_keep(const char* raw_key) const {
    const unsigned pair = (unsigned{static_cast<unsigned char>(raw_key[0])} << 8) | static_cast<unsigned char>(raw_key[1]);
    return (pairs_[pair >> 6] >> (pair & 63)) & 1;
  }
  // `raw_key` is the key as written, after its opening quote, `value` the start of its value; `field` is
  // its field (an escaped key is unescaped through it, so the answer is exact). Sets `raw_length` (up to
  // the closing quote) when kept.
  bool keeps(const char* raw_key, const char* value, simdjson::ondemand::field& field, size_t& raw_length) const;

 private:
  void mark(unsigned char first, unsigned char second) {
    const unsigned pair = (unsigned{first} << 8) | second;
    pairs_[pair >> 6] |= uint64_t{1} << (pair & 63);
  }
  const ArgKeySet& keys_;
  std::array<std::vector<std::string_view>, 256> by_first_;  // keys with nothing to escape
  std::array<uint64_t, 65536 / 64> pairs_{};                 // (first byte, second byte) that may start a kept key
  std::array<size_t, 256> shortest_{};                       // by first character: the shortest kept key
};

enum class EventStatus { Stored, Skipped, Malformed, Fatal };

// Reads events (simdjson On-Demand objects) into a chunk. One per thread; `reset` starts a new chunk.
class ChunkParser {
 public:
  ChunkParser() : intern_cache_(4096) {}
  EventChunk& chunk() { return chunk_; }
  EventChunk take();
  // The events parsed next lie in a copy of the file's bytes from `file_offset` on at `text`.
  // `text_end` bounds the text (for the extent of a nested args value).
  void set_origin(const char* text, size_t file_offset, const char* text_end) {
    origin_ = text;
    origin_offset_ = file_offset;
    origin_end_ = text_end;
  }
  // nullptr keeps every args object as a view of the file (the default).
  void set_arg_keys(const ArgKeyFilter* keep) { keep_ = keep; }
  // `offset` is the event's position in the file, for messages.
  EventStatus parse_event(simdjson::ondemand::object& object, simdjson::ondemand::document& doc, size_t offset);
  void note_malformed(size_t offset, const std::string& reason);

 private:
  struct EventFields;
  EventStatus parse_fields(simdjson::ondemand::object& object, simdjson::ondemand::document& doc, size_t offset);
  bool read_args(simdjson::ondemand::value& value, simdjson::ondemand::document& doc, EventFields& fields);
  EventStatus store(EventFields& fields, size_t offset);
  uint32_t track_for(const EventFields& fields, EventKind kind);
  StringId intern(std::string_view text);
  void clear_caches();

  EventChunk chunk_;
  // Direct-mapped caches in front of the pools: names and keys repeat, and a cheap hash of length and end
  // bytes plus one comparison is faster than hashing every byte of a long kernel name.
  // A slot holds an entry of the current chunk only when its generation is the parser's: starting a new
  // chunk is one increment, not a sweep of the table (fuzzing builds take a chunk per 2 KiB window).
  struct CachedString {
    const char* text = nullptr;
    size_t length = 0;
    uint32_t id = 0;
    uint32_t generation = 0;
  };
  std::vector<CachedString> intern_cache_;
  uint32_t cache_generation_ = 1;
  const char* origin_ = nullptr;
  size_t origin_offset_ = 0;
  const char* origin_end_ = nullptr;
  const ArgKeyFilter* keep_ = nullptr;
  std::vector<uint8_t> category_kind_;  // per local category id: EventKind + 1, 0 = not yet known
  std::unordered_map<uint64_t, uint32_t> cpu_tracks_, gpu_tracks_;
  std::string_view last_pid_token_, last_tid_token_;  // one-entry caches: consecutive events share pid and tid
  StringId last_pid_ = 0, last_tid_ = 0;
};

}  // namespace ptadvise::detail
