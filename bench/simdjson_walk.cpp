// simdjson_walk: a bare simdjson On-Demand pass over a Kineto trace, the practical speed limit for any loader
// of the same bytes. It loads the file into one padded buffer, indexes the whole document at once (the
// textbook On-Demand use), walks `traceEvents` (object form) or the top-level array (2020 form) and visits
// every field of every event exactly once. It builds nothing and keeps nothing; a checksum of what it read
// keeps the compiler from skipping any of it.
//
//   simdjson_walk [--depth 1|2|all] [--windows] TRACE.json
//
// --windows   index and walk the event list in 4 MiB windows, as ptadvise's loader does (the honest
//             in-process limit: stage 1 + the field walk with the index in cache)
// --depth 1   every event field: keys compared raw (as a loader dispatches on them), `name`/`cat`/`ph`
//             unescaped, `ts`/`dur` parsed as numbers, other values read as raw tokens; `args` not entered
// --depth 2   (default) also every field of `args`, each value read as a raw token: the least work that
//             still touches every field a loader must look at (ids such as correlation live in args)
// --depth all every value of the document decoded (strings unescaped, numbers parsed, keys unescaped)
//
// Prints one line: events, bytes, checksum, the load/parse split in wall seconds and the parse's CPU seconds.
// Exit code 2 with "simdjson_walk: FILE: byte N: message" on unreadable or invalid JSON.
#include <simdjson.h>

#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string.h>  // memmem, memrchr
#include <string>
#include <string_view>
#include <utility>

namespace {

namespace od = simdjson::ondemand;

enum class Depth { EventFields, ArgsFields, Everything };

struct Totals {
  uint64_t events = 0;
  uint64_t non_object_events = 0;
  uint64_t checksum = 0;  // folds in what was decoded, so no visit can be optimised away
};

// The first error wins; the walk stops at it.
struct Walk {
  Depth depth = Depth::ArgsFields;
  Totals totals;
  simdjson::error_code error = simdjson::SUCCESS;
  const char* error_at = nullptr;

  bool fail(simdjson::error_code code, od::document& doc) {
    if (error == simdjson::SUCCESS) {
      error = code;
      const char* location = nullptr;
      if (doc.current_location().get(location) == simdjson::SUCCESS) error_at = location;
    }
    return false;
  }

  bool visit_scalar(od::value& value, od::json_type type, od::document& doc) {
    switch (type) {
      case od::json_type::string: {
        std::string_view text;
        if (auto code = value.get_string().get(text)) return fail(code, doc);
        totals.checksum += text.size();
        return true;
      }
      case od::json_type::number: {
        od::number number;
        if (auto code = value.get_number().get(number)) return fail(code, doc);
        if (number.is_int64()) {
          totals.checksum += static_cast<uint64_t>(number.get_int64());
        } else if (number.is_uint64()) {
          totals.checksum += number.get_uint64();
        } else {
          totals.checksum += static_cast<uint64_t>(static_cast<int64_t>(number.get_double()));
        }
        return true;
      }
      case od::json_type::boolean: {
        bool flag = false;
        if (auto code = value.get_bool().get(flag)) return fail(code, doc);
        totals.checksum += flag ? 1 : 0;
        return true;
      }
      case od::json_type::null: {
        bool is_null = false;
        if (auto code = value.is_null().get(is_null)) return fail(code, doc);
        return true;
      }
      default:
        return true;
    }
  }

  // Skipping a container still has to find its end: raw_json() does exactly that.
  bool skip_container(od::value& value, od::json_type type, od::document& doc) {
    std::string_view raw;
    if (type == od::json_type::object) {
      od::object object;
      if (auto code = value.get_object().get(object)) return fail(code, doc);
      if (auto code = object.raw_json().get(raw)) return fail(code, doc);
    } else {
      od::array array;
      if (auto code = value.get_array().get(array)) return fail(code, doc);
      if (auto code = array.raw_json().get(raw)) return fail(code, doc);
    }
    totals.checksum += raw.size();
    return true;
  }

  // levels: how many container levels below this value are still decoded (-1: all of them).
  bool visit_value(od::value value, int levels, od::document& doc) {
    od::json_type type;
    if (auto code = value.type().get(type)) return fail(code, doc);
    if (type != od::json_type::object && type != od::json_type::array) return visit_scalar(value, type, doc);
    if (levels == 0) return skip_container(value, type, doc);
    const int next = levels < 0 ? -1 : levels - 1;
    if (type == od::json_type::object) {
      od::object object;
      if (auto code = value.get_object().get(object)) return fail(code, doc);
      for (auto field_result : object) {
        od::field field;
        if (auto code = std::move(field_result).get(field)) return fail(code, doc);
        std::string_view key;
        if (auto code = field.unescaped_key().get(key)) return fail(code, doc);
        totals.checksum += key.size();
        if (!visit_value(field.value(), next, doc)) return false;
      }
      return true;
    }
    od::array array;
    if (auto code = value.get_array().get(array)) return fail(code, doc);
    for (auto element_result : array) {
      od::value element;
      if (auto code = std::move(element_result).get(element)) return fail(code, doc);
      if (!visit_value(element, next, doc)) return false;
    }
    return true;
  }

  // Reading a value's raw token is the cheapest way to touch it; containers are then skipped as a whole
  // when the iteration moves on.
  void touch(od::value& value) { totals.checksum += static_cast<unsigned char>(value.raw_json_token()[0]); }

  bool visit_args(od::value value, od::document& doc) {
    od::object args;
    auto code = value.get_object().get(args);
    if (code == simdjson::INCORRECT_TYPE) return true;
    if (code) return fail(code, doc);
    for (auto field_result : args) {
      od::field field;
      if (auto failure = std::move(field_result).get(field)) return fail(failure, doc);
      totals.checksum += static_cast<unsigned char>(field.key().raw()[0]);
      od::value arg = field.value();
      touch(arg);
    }
    return true;
  }

  bool visit_event_fields(od::object& event, od::document& doc) {
    for (auto field_result : event) {
      od::field field;
      if (auto code = std::move(field_result).get(field)) return fail(code, doc);
      const od::raw_json_string key = field.key();
      od::value value = field.value();
      if (key == "name" || key == "cat" || key == "ph") {
        std::string_view text;
        auto code = value.get_string().get(text);
        if (code == simdjson::SUCCESS) {
          totals.checksum += text.size();
        } else if (code != simdjson::INCORRECT_TYPE) {
          return fail(code, doc);
        }
      } else if (key == "ts" || key == "dur") {
        double number = 0;
        auto code = value.get_double().get(number);
        if (code == simdjson::SUCCESS) {
          totals.checksum += static_cast<uint64_t>(static_cast<int64_t>(number));
        } else if (code == simdjson::INCORRECT_TYPE) {
          touch(value);  // a string timestamp ("123.456")
        } else {
          return fail(code, doc);
        }
      } else if (key == "args" && depth == Depth::ArgsFields) {
        if (!visit_args(value, doc)) return false;
      } else {
        touch(value);
      }
    }
    return true;
  }

  bool visit_event(od::value value, od::document& doc) {
    od::json_type type;
    if (auto code = value.type().get(type)) return fail(code, doc);
    if (type != od::json_type::object) {
      ++totals.non_object_events;
      return visit_value(value, depth == Depth::Everything ? -1 : 0, doc);
    }
    od::object event;
    if (auto code = value.get_object().get(event)) return fail(code, doc);
    ++totals.events;
    if (depth != Depth::Everything) return visit_event_fields(event, doc);
    for (auto field_result : event) {
      od::field field;
      if (auto code = std::move(field_result).get(field)) return fail(code, doc);
      std::string_view key;
      if (auto code = field.unescaped_key().get(key)) return fail(code, doc);
      totals.checksum += key.size();
      if (!visit_value(field.value(), -1, doc)) return false;
    }
    return true;
  }

  bool visit_events(od::array events, od::document& doc) {
    for (auto element_result : events) {
      od::value element;
      if (auto code = std::move(element_result).get(element)) return fail(code, doc);
      if (!visit_event(element, doc)) return false;
    }
    return true;
  }

  bool visit_document(od::document& doc) {
    od::json_type type;
    if (auto code = doc.type().get(type)) return fail(code, doc);
    if (type == od::json_type::array) {
      od::array events;
      if (auto code = doc.get_array().get(events)) return fail(code, doc);
      return visit_events(events, doc);
    }
    od::object root;
    if (auto code = doc.get_object().get(root)) return fail(code, doc);
    for (auto field_result : root) {
      od::field field;
      if (auto code = std::move(field_result).get(field)) return fail(code, doc);
      std::string_view key;
      if (auto code = field.unescaped_key().get(key)) return fail(code, doc);
      if (key == "traceEvents") {
        od::array events;
        if (auto code = field.value().get_array().get(events)) return fail(code, doc);
        if (!visit_events(events, doc)) return false;
      } else if (!visit_value(field.value(), depth == Depth::Everything ? -1 : 0, doc)) {
        return false;
      }
    }
    return true;
  }
};

// CPU time of this process: on a loaded machine the steadier figure.
double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

int usage() {
  std::fprintf(stderr, "usage: simdjson_walk [--depth 1|2|all] [--windows] TRACE.json\n");
  return 2;
}

// --windows: the event list is indexed and walked in windows of about 4 MiB, as ptadvise's loader does, so
// simdjson's structural index stays in the CPU caches. Each window ends at a line break: the comma
// before it becomes the window's closing ']' and the byte before the window its opening '['. Needs one
// event per line (what bench/gen_trace.py writes); the top-level keys other than traceEvents are skipped.
bool walk_windows(simdjson::padded_string& json, Walk& walk, od::parser& parser, const char* path) {
  constexpr size_t kWindow = size_t{4} << 20;
  char* data = json.data();
  const size_t size = json.size();
  const char* key = static_cast<const char*>(memmem(data, size, "\"traceEvents\"", 13));
  const char* open = key ? static_cast<const char*>(std::memchr(key, '[', size - (key - data))) : nullptr;
  if (open == nullptr) {
    std::fprintf(stderr, "simdjson_walk: %s: --windows needs an object with a traceEvents list\n", path);
    return false;
  }
  size_t pos = static_cast<size_t>(open - data) + 1;
  while (true) {
    while (pos < size && (data[pos] == ' ' || data[pos] == '\n' || data[pos] == '\r' || data[pos] == '\t')) ++pos;
    if (pos >= size || data[pos] == ']') return true;
    size_t end = 0;  // the window's closing bracket
    const bool last = size - pos <= kWindow;
    if (!last) {
      const void* newline = memrchr(data + pos + kWindow / 2, '\n', kWindow / 2);
      if (newline == nullptr) {
        std::fprintf(stderr, "simdjson_walk: %s: --windows needs one event per line\n", path);
        return false;
      }
      end = static_cast<size_t>(static_cast<const char*>(newline) - data);
      while (end > pos && data[end] != ',') --end;
    } else {
      const void* close = memrchr(data + pos, ']', size - pos);
      end = close ? static_cast<size_t>(static_cast<const char*>(close) - data) : size;
    }
    const size_t next = end + 1;
    data[pos - 1] = '[';
    data[end] = ']';
    od::document doc;
    if (auto code = parser.iterate(data + pos - 1, end - pos + 2, size + simdjson::SIMDJSON_PADDING - (pos - 1)).get(doc)) {
      std::fprintf(stderr, "simdjson_walk: %s: byte %zu: %s\n", path, pos, simdjson::error_message(code));
      return false;
    }
    od::array events;
    if (auto code = doc.get_array().get(events)) {
      std::fprintf(stderr, "simdjson_walk: %s: byte %zu: %s\n", path, pos, simdjson::error_message(code));
      return false;
    }
    if (!walk.visit_events(events, doc)) {
      const long offset = walk.error_at ? static_cast<long>(walk.error_at - data) : -1;
      std::fprintf(stderr, "simdjson_walk: %s: byte %ld: %s\n", path, offset, simdjson::error_message(walk.error));
      return false;
    }
    if (last) return true;
    pos = next;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Depth depth = Depth::ArgsFields;
  bool windows = false;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--depth" && i + 1 < argc) {
      const std::string_view level = argv[++i];
      if (level == "1") {
        depth = Depth::EventFields;
      } else if (level == "2") {
        depth = Depth::ArgsFields;
      } else if (level == "all") {
        depth = Depth::Everything;
      } else {
        return usage();
      }
    } else if (arg == "--windows") {
      windows = true;
    } else if (!arg.empty() && arg[0] != '-' && path == nullptr) {
      path = argv[i];
    } else {
      return usage();
    }
  }
  if (path == nullptr) return usage();

  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  simdjson::padded_string json;
  if (auto code = simdjson::padded_string::load(path).get(json)) {
    std::fprintf(stderr, "simdjson_walk: %s: %s\n", path, simdjson::error_message(code));
    return 2;
  }
  const auto loaded = Clock::now();
  const double cpu_loaded = cpu_seconds();

  od::parser parser;
  od::document doc;
  Walk walk;
  walk.depth = depth;
  if (windows) {
    if (!walk_windows(json, walk, parser, path)) return 2;
  } else if (auto code = parser.iterate(json).get(doc)) {
    std::fprintf(stderr, "simdjson_walk: %s: %s\n", path, simdjson::error_message(code));
    return 2;
  }
  if (!windows && !walk.visit_document(doc)) {
    const long offset = walk.error_at ? static_cast<long>(walk.error_at - json.data()) : -1;
    std::fprintf(stderr, "simdjson_walk: %s: byte %ld: %s\n", path, offset, simdjson::error_message(walk.error));
    return 2;
  }
  const auto parsed = Clock::now();
  const double cpu_parsed = cpu_seconds();
  const std::chrono::duration<double> load_s = loaded - started;
  const std::chrono::duration<double> parse_s = parsed - loaded;
  std::printf("events=%llu non_object=%llu bytes=%zu checksum=%llu load_s=%.3f parse_s=%.3f parse_cpu_s=%.3f\n",
              static_cast<unsigned long long>(walk.totals.events),
              static_cast<unsigned long long>(walk.totals.non_object_events), json.size(),
              static_cast<unsigned long long>(walk.totals.checksum), load_s.count(), parse_s.count(),
              cpu_parsed - cpu_loaded);
  return 0;
}
