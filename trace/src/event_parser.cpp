// Reading one event object into an EventChunk (event_chunk.h): one pass over its fields and its args.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "event_chunk.h"
#include "json_scan.h"
#include "numbers.h"

namespace ptadvise::detail {

namespace ondemand = simdjson::ondemand;

namespace {

EventKind kind_of_category(std::string_view category) {
  static const std::unordered_map<std::string_view, EventKind> kinds{
      {"", EventKind::CpuOp},
      {"cpu_op", EventKind::CpuOp},
      {"Operator", EventKind::CpuOp},
      {"user_annotation", EventKind::UserAnnotation},
      {"python_function", EventKind::PythonFunction},
      {"cuda_runtime", EventKind::Runtime},
      {"Runtime", EventKind::Runtime},
      {"cuda_driver", EventKind::Driver},
      // Intel GPUs (Kineto's XPU plugin) and out-of-tree backends: their API calls carry the same
      // correlation ids as the GPU ops they issue.
      {"xpu_runtime", EventKind::Runtime},
      {"xpu_driver", EventKind::Driver},
      {"privateuse1_runtime", EventKind::Runtime},
      {"privateuse1_driver", EventKind::Driver},
      {"kernel", EventKind::Kernel},
      {"Kernel", EventKind::Kernel},
      {"gpu_memcpy", EventKind::Memcpy},
      {"Memcpy", EventKind::Memcpy},
      {"gpu_memset", EventKind::Memset},
      {"Memset", EventKind::Memset},
      {"cuda_sync", EventKind::Sync},
      {"gpu_user_annotation", EventKind::GpuAnnotation},
      {"collective_comm", EventKind::Collective},
  };
  auto it = kinds.find(category);
  return it == kinds.end() ? EventKind::Other : it->second;
}

bool is_cpu_gpu_flow(std::string_view category) {
  return category == "ac2g" || category == "async_cpu_to_gpu" || category == "async";
}

size_t cache_slot(std::string_view text, size_t slots) {
  uint64_t head = 0, tail = 0;
  const size_t size = text.size();
  if (size >= 8) {
    std::memcpy(&head, text.data(), 8);
    std::memcpy(&tail, text.data() + size - 8, 8);
  } else {
    for (size_t i = 0; i < size; ++i) head = (head << 8) | static_cast<unsigned char>(text[i]);
  }
  uint64_t hash = (size * 0x9E3779B97F4A7C15ULL) ^ (head * 0xFF51AFD7ED558CCDULL) ^ (tail * 0xC4CEB9FE1A85EC53ULL);
  hash ^= hash >> 31;
  return hash & (slots - 1);
}

bool same_text(const char* cached, size_t length, std::string_view text) {
  return length == text.size() && cached != nullptr && std::memcmp(cached, text.data(), length) == 0;
}

}  // namespace

bool ArgKeyFilter::keeps(const char* raw_key, const char* value, ondemand::field& field, size_t& raw_length) const {
  // Only white space and the colon lie between the key's closing quote and its value.
  const char* close = value - 1;
  while (*close != ':') --close;
  --close;
  while (*close != '"') --close;
  const auto length = static_cast<size_t>(close - raw_key);
  raw_length = length;
  const auto first = static_cast<unsigned char>(raw_key[0]);
  for (std::string_view key : by_first_[first]) {
    if (key.size() == length && std::memcmp(key.data(), raw_key, length) == 0) return true;
  }
  // Written with an escape, a key is longer than its text: only such a key may still be a kept one.
  if (first != '\\' && (length <= shortest_[first] || std::memchr(raw_key, '\\', length) == nullptr)) return false;
  std::string_view key;
  return field.unescaped_key().get(key) == simdjson::SUCCESS && keys_.contains(key);
}

uint32_t StringTable::intern(std::string_view text) {
  if ((views_.size() + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  size_t at = std::hash<std::string_view>{}(text) & mask;
  for (;; at = (at + 1) & mask) {
    const uint32_t slot = slots_[at];
    if (slot == 0) break;
    if (views_[slot - 1] == text) return slot - 1;
  }
  const char* stored = "";
  if (!text.empty()) {
    if (page_size_ - page_used_ < text.size()) {
      // Pages grow from 16 KiB to 1 MiB (or the text's size): most tables (one per window) stay small.
      page_size_ = std::max(text.size(), std::min(size_t{1} << 20, std::max(page_size_ * 2, size_t{16} << 10)));
      pages_.push_back(std::unique_ptr<char[]>(new char[page_size_]));
      page_used_ = 0;
    }
    char* page = pages_.back().get() + page_used_;
    std::memcpy(page, text.data(), text.size());
    page_used_ += text.size();
    stored = page;
  }
  const auto id = static_cast<uint32_t>(views_.size());
  views_.emplace_back(stored, text.size());
  slots_[at] = id + 1;
  return id;
}

// What one event's fields said, before it is stored.
struct ChunkParser::EventFields {
  char phase = 0;
  bool phase_ok = false;
  bool has_ts = false, has_dur = false, has_name = false;
  bool bad_ts = false, bad_dur = false, bad_name = false, bad_phase = false;
  int64_t ts_ns = 0, dur_ns = 0;
  StringId name = 0;
  StringId category = 0;
  bool has_category = false;
  std::string_view pid_token, tid_token;  // raw tokens (numbers or quoted strings)
  std::string_view args_name;             // args.name, for metadata events
  uint64_t args_offset = 0;  // in the file
  uint32_t args_length = 0;
  int64_t correlation = -1, external_id = -1, device = -1, stream = -1, flow_id = -1;
};

void ChunkParser::clear_caches() {
  if (++cache_generation_ == 0) {  // wrapped: slots of an old generation could look current again
    std::fill(intern_cache_.begin(), intern_cache_.end(), CachedString{});
    cache_generation_ = 1;
  }
  category_kind_.clear();
  cpu_tracks_.clear();
  gpu_tracks_.clear();
  last_pid_token_ = last_tid_token_ = {};
  last_pid_ = last_tid_ = 0;
}

EventChunk ChunkParser::take() {
  EventChunk out = std::move(chunk_);
  chunk_ = EventChunk();
  clear_caches();
  return out;
}

StringId ChunkParser::intern(std::string_view text) {
  CachedString& slot = intern_cache_[cache_slot(text, intern_cache_.size())];
  if (slot.generation == cache_generation_ && same_text(slot.text, slot.length, text)) return slot.id;
  const StringId id = chunk_.strings.intern(text);
  slot = {chunk_.strings.view(id).data(), text.size(), id, cache_generation_};
  return id;
}

bool ChunkParser::read_args(ondemand::value& value, ondemand::document& doc, EventFields& fields) {
  const char* start = value.raw_json_token().data();
  ondemand::object args;
  auto error = value.get_object().get(args);
  if (error == simdjson::INCORRECT_TYPE) return true;  // args of another type: ignored, not fatal
  if (error) return false;
  std::string& kept = chunk_.args_text;
  const size_t kept_from = kept.size();
  // A kept array or object value ends where the next field's key begins (before its ',') or where the
  // args object closes: simdjson skips it on its structural index instead of a scan of its bytes here.
  const char* nested = nullptr;
  auto end_nested = [&](const char* after) {  // `after`: the next key's opening quote, or the closing brace
    const char* end = after;
    while (end > nested && is_json_space(end[-1])) --end;
    if (*after == '"' && end > nested && end[-1] == ',') --end;
    while (end > nested && is_json_space(end[-1])) --end;
    kept.append(nested, static_cast<size_t>(end - nested));
    nested = nullptr;
  };
  for (auto field_result : args) {
    if (field_result.error()) return false;
    ondemand::field& field = field_result.value_unsafe();  // not copied: see parse_fields
    const char* key = field.key().raw();
    ondemand::value& arg = field.value();
    if (nested != nullptr) end_nested(key - 1);
    size_t key_length = 0;
    if (keep_ != nullptr && keep_->may_keep(key) && keep_->keeps(key, arg.raw_json_token().data(), field, key_length)) {
      // Copied as written (escapes and all), so the kept object reads back exactly as the file's would.
      std::string_view token = arg.raw_json_token();
      kept += kept.size() == kept_from ? "{\"" : ",\"";
      kept.append(key, key_length);
      kept += "\":";
      if (!token.empty() && (token.front() == '{' || token.front() == '[')) {
        nested = token.data();
      } else {
        while (!token.empty() && is_json_space(token.back())) token.remove_suffix(1);
        kept += token;
      }
    }
    int64_t number = -1;
    switch (key[0]) {
      case 'c':
        if (key_is(key, "correlation")) {
          fields.correlation = parse_int_token(arg.raw_json_token(), number) ? number : -1;
        }
        break;
      case 'E':
      case 'e':
        if (key_is(key, "External id") || key_is(key, "external id")) {
          fields.external_id = parse_int_token(arg.raw_json_token(), number) ? number : -1;
        }
        break;
      case 'd':
        if (key_is(key, "device")) fields.device = parse_int_token(arg.raw_json_token(), number) ? number : -1;
        break;
      case 's':
        if (key_is(key, "stream")) fields.stream = parse_int_token(arg.raw_json_token(), number) ? number : -1;
        break;
      case 'n':
        if (key_is(key, "name")) {
          std::string_view text;
          if (arg.get_string().get(text) == simdjson::SUCCESS) fields.args_name = text;
        }
        break;
      default:
        break;
    }
  }
  if (keep_ != nullptr) {
    if (kept.size() == kept_from) return true;  // no kept key: no args
    if (nested != nullptr) {
      // The last field: its value ends before the brace that closes the args object, just before the
      // iterator's next token.
      const char* next = nullptr;
      if (doc.current_location().get(next) == simdjson::SUCCESS) {
        const char* close = next - 1;
        while (close > nested && *close != '}') --close;
        end_nested(close);
      } else {  // the document ends with this object
        const auto at = static_cast<size_t>(nested - origin_);
        const size_t end = skip_value(origin_, static_cast<size_t>(origin_end_ - origin_), at);
        if (end == kNotFound) return false;
        kept.append(nested, end - at);
      }
    }
    kept += '}';
    fields.args_offset = kept_from;
    fields.args_length = static_cast<uint32_t>(kept.size() - kept_from);
    return true;
  }
  // The object is consumed: the iterator sits on the token after its closing brace.
  const char* next = nullptr;
  if (doc.current_location().get(next)) return false;
  const char* close = next - 1;
  while (close > start && *close != '}') --close;
  fields.args_offset = origin_offset_ + static_cast<uint64_t>(start - origin_);
  fields.args_length = static_cast<uint32_t>(close - start + 1);
  return true;
}

EventStatus ChunkParser::parse_event(ondemand::object& object, ondemand::document& doc, size_t offset) {
  // Kept args of an event that is not stored (broken, malformed, metadata) are dropped again.
  const size_t kept_from = chunk_.args_text.size();
  const EventStatus status = parse_fields(object, doc, offset);
  if (status != EventStatus::Stored) chunk_.args_text.resize(kept_from);
  return status;
}

EventStatus ChunkParser::parse_fields(ondemand::object& object, ondemand::document& doc, size_t offset) {
  EventFields fields;
  for (auto field_result : object) {
    if (field_result.error()) return EventStatus::Fatal;
    // References, not copies: GCC copies simdjson's field (key and value iterator), just written member by
    // member, with one 16-byte load that cannot be forwarded from those stores: a stall per field.
    ondemand::field& field = field_result.value_unsafe();
    const char* key = field.key().raw();
    ondemand::value& value = field.value();
    switch (key[0]) {
      case 'p':
        if (key_is(key, "ph")) {
          ondemand::raw_json_string raw;
          if (value.get_raw_json_string().get(raw) == simdjson::SUCCESS && raw.raw()[0] != '"' &&
              raw.raw()[1] == '"') {
            fields.phase = raw.raw()[0];
            fields.phase_ok = true;
          } else {
            fields.bad_phase = true;
          }
        } else if (key_is(key, "pid")) {
          fields.pid_token = value.raw_json_token();
        }
        break;
      case 't':
        if (key_is(key, "ts")) {
          fields.has_ts = true;
          fields.bad_ts = !parse_time_ns(value.raw_json_token(), fields.ts_ns);
        } else if (key_is(key, "tid")) {
          fields.tid_token = value.raw_json_token();
        }
        break;
      case 'd':
        if (key_is(key, "dur")) {
          fields.has_dur = true;
          fields.bad_dur = !parse_time_ns(value.raw_json_token(), fields.dur_ns);
        }
        break;
      case 'n':
        if (key_is(key, "name")) {
          std::string_view text;
          auto error = value.get_string().get(text);
          if (error == simdjson::SUCCESS) {
            fields.has_name = true;
            fields.name = intern(text);
          } else if (error == simdjson::INCORRECT_TYPE) {
            fields.bad_name = true;
          } else {
            return EventStatus::Fatal;
          }
        }
        break;
      case 'c':
        if (key_is(key, "cat")) {
          std::string_view text;
          auto error = value.get_string().get(text);
          if (error == simdjson::SUCCESS) {
            fields.category = intern(text);
            fields.has_category = true;
          } else if (error != simdjson::INCORRECT_TYPE) {
            return EventStatus::Fatal;
          }
        }
        break;
      case 'a':
        if (key_is(key, "args")) {
          if (!read_args(value, doc, fields)) return EventStatus::Fatal;
        }
        break;
      case 'i':
        if (key_is(key, "id")) {
          int64_t id = -1;
          fields.flow_id = parse_int_token(value.raw_json_token(), id) ? id : -1;
        }
        break;
      default:
        break;
    }
  }
  return store(fields, offset);
}

void ChunkParser::note_malformed(size_t offset, const std::string& reason) {
  ++chunk_.malformed_events;
  if (chunk_.first_malformed.empty()) chunk_.first_malformed = "byte " + std::to_string(offset) + ": " + reason;
}

uint32_t ChunkParser::track_for(const EventFields& fields, EventKind kind) {
  StringId pid_text = 0, tid_text = 0;
  if (!fields.pid_token.empty()) {
    if (fields.pid_token == last_pid_token_) {
      pid_text = last_pid_;
    } else {
      std::string_view token = fields.pid_token;
      pid_text = unquote_token(token) ? chunk_.strings.intern(token) : 0;
      last_pid_token_ = fields.pid_token;
      last_pid_ = pid_text;
    }
  }
  if (!fields.tid_token.empty()) {
    if (fields.tid_token == last_tid_token_) {
      tid_text = last_tid_;
    } else {
      std::string_view token = fields.tid_token;
      tid_text = unquote_token(token) ? chunk_.strings.intern(token) : 0;
      last_tid_token_ = fields.tid_token;
      last_tid_ = tid_text;
    }
  }
  const bool gpu = is_gpu_side(kind);
  uint64_t key = (uint64_t{pid_text} << 32) | tid_text;
  auto& tracks = gpu ? gpu_tracks_ : cpu_tracks_;
  auto [it, inserted] = tracks.try_emplace(key, static_cast<uint32_t>(chunk_.tracks.size()));
  if (!inserted) return it->second;

  Track track;
  track.kind = gpu ? TrackKind::Gpu : TrackKind::Cpu;
  track.pid_text = pid_text;
  track.tid_text = tid_text;
  int64_t number = -1;
  if (parse_int_token(chunk_.strings.view(pid_text), number)) track.pid = number;
  if (parse_int_token(chunk_.strings.view(tid_text), number)) track.tid = number;
  if (gpu) {
    int64_t device = fields.device >= 0 ? fields.device : track.pid;
    track.device = device >= 0 && device <= INT32_MAX ? static_cast<int32_t>(device) : -1;
    track.stream = fields.stream >= 0 ? fields.stream : track.tid;
    std::string_view tid_view = chunk_.strings.view(tid_text);
    if (track.stream < 0 && tid_view.substr(0, 7) == "stream " && parse_int_token(tid_view.substr(7), number)) {
      track.stream = number;  // 2020 traces: tid "stream 7"
    }
  }
  chunk_.tracks.push_back(track);
  return it->second;
}

EventStatus ChunkParser::store(EventFields& fields, size_t offset) {
  ++chunk_.events_seen;
  if (!fields.phase_ok) {
    note_malformed(offset, fields.bad_phase ? "\"ph\" is not a one-letter string" : "missing \"ph\"");
    return EventStatus::Malformed;
  }
  if (fields.has_category) chunk_.any_category = true;
  const char phase = fields.phase;
  if (phase == 'M') {
    if (fields.has_name && !fields.args_name.empty()) {
      std::string_view what = chunk_.strings.view(fields.name);
      std::string_view pid = fields.pid_token, tid = fields.tid_token;
      if (what == "process_name" || what == "thread_name") {
        EventChunk::Name name;
        name.pid = unquote_token(pid) ? chunk_.strings.intern(pid) : 0;
        name.thread = what == "thread_name";
        if (name.thread) name.tid = unquote_token(tid) ? chunk_.strings.intern(tid) : 0;
        name.name = chunk_.strings.intern(fields.args_name);
        chunk_.names.push_back(name);
      } else {
        (void)(unquote_token(pid) ? chunk_.strings.intern(pid) : 0);  // interned in the same order as ever
      }
    }
    return EventStatus::Skipped;
  }
  if (phase == 's' || phase == 'f' || phase == 't') {
    if (phase == 's' && fields.has_category && fields.flow_id >= 0 &&
        is_cpu_gpu_flow(chunk_.strings.view(fields.category))) {
      chunk_.flow_correlation.push_back(fields.flow_id);
    }
    return EventStatus::Skipped;
  }
  const bool instant = phase == 'i' || phase == 'I';
  if (phase != 'X' && !instant) {
    ++chunk_.unknown_phases;
    if (phase == 'B' || phase == 'E') ++chunk_.begin_end_events;
    return EventStatus::Skipped;
  }
  if (!fields.has_name || fields.bad_name) {
    note_malformed(offset, fields.bad_name ? "\"name\" is not a string" : "missing \"name\"");
    return EventStatus::Malformed;
  }
  if (!fields.has_ts || fields.bad_ts) {
    note_malformed(offset, fields.bad_ts ? "\"ts\" is not a time in microseconds" : "missing \"ts\"");
    return EventStatus::Malformed;
  }
  if (!instant && (!fields.has_dur || fields.bad_dur)) {
    note_malformed(offset, fields.bad_dur ? "\"dur\" is not a time in microseconds" : "missing \"dur\"");
    return EventStatus::Malformed;
  }

  EventKind kind;
  if (instant) {
    kind = chunk_.strings.view(fields.name) == "[memory]" ? EventKind::MemoryInstant : EventKind::Instant;
    fields.dur_ns = 0;
  } else {
    StringId category = fields.has_category ? fields.category : 0;
    if (category >= category_kind_.size()) category_kind_.resize(category + 1, 0);
    if (category_kind_[category] == 0) {
      category_kind_[category] =
          static_cast<uint8_t>(static_cast<uint8_t>(kind_of_category(chunk_.strings.view(category))) + 1);
    }
    kind = static_cast<EventKind>(category_kind_[category] - 1);
    if (kind == EventKind::Other) ++chunk_.other_events[category];  // rare: said when unknown (loaded_checks.cpp)
  }
  if (fields.dur_ns < 0) {
    ++chunk_.negative_durations;
    fields.dur_ns = 0;
  }

  EventChunk& c = chunk_;
  c.ts_ns.push_back(fields.ts_ns);
  c.dur_ns.push_back(fields.dur_ns);
  c.kind.push_back(kind);
  c.name.push_back(fields.name);
  c.category.push_back(fields.has_category ? fields.category : 0);
  c.track.push_back(track_for(fields, kind));
  c.correlation.push_back(fields.correlation);
  c.external_id.push_back(fields.external_id);
  c.args_offset.push_back(fields.args_offset);
  c.args_length.push_back(fields.args_length);
  return EventStatus::Stored;
}

}  // namespace ptadvise::detail
