// The event list read in parallel windows gives the timeline a single pass gives: same events, ids,
// tracks, stats and warnings, also around broken events and in pretty-printed (multi-line) traces.
#include <doctest/doctest.h>

#include <string>

#include "ptadvise/loader.h"

using ptadvise::LoadOptions;
using ptadvise::Timeline;

namespace {

// `events` events over 3 threads, about 300 bytes each; pretty-printed over several lines when `pretty`;
// `broken` puts an unescaped quote into every 5000th event's name.
std::string many_events(size_t events, bool pretty, bool broken) {
  std::string out = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (size_t i = 0; i < events; ++i) {
    const std::string name = broken && i % 5000 == 2500 ? "aten::\"bad" : "aten::op_" + std::to_string(i % 97);
    const std::string sep = pretty ? "\n    " : " ";
    out += std::string(i == 0 ? "" : ",\n") + "  {" + sep + "\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + name +
           "\"," + sep + "\"pid\": 7, \"tid\": " + std::to_string(i % 3) + ", \"ts\": " + std::to_string(1000 + i * 10) +
           ", \"dur\": 5," + sep + "\"args\": {\"External id\": " + std::to_string(i) +
           ", \"Input Dims\": [[2, 3], [4]], \"Call stack\": \"train.py(" + std::to_string(i % 13) +
           "): step\"}\n  }";
  }
  out += "\n], \"traceName\": \"t\"}\n";
  return out;
}

Timeline load_with(const std::string& bytes, unsigned threads) {
  LoadOptions options;
  options.threads = threads;
  auto result = ptadvise::load_trace_bytes(bytes, "windows.json", options);
  REQUIRE(std::holds_alternative<Timeline>(result));
  return std::move(std::get<Timeline>(result));
}

void check_same(const Timeline& one, const Timeline& many) {
  REQUIRE(one.events.size() == many.events.size());
  CHECK(one.events.ts_ns == many.events.ts_ns);
  CHECK(one.events.dur_ns == many.events.dur_ns);
  CHECK(one.events.name == many.events.name);
  CHECK(one.events.track == many.events.track);
  CHECK(one.events.external_id == many.events.external_id);
  CHECK(one.events.args_offset == many.events.args_offset);
  CHECK(one.events.args_length == many.events.args_length);
  CHECK(one.events.parent == many.events.parent);
  CHECK(one.strings.size() == many.strings.size());
  CHECK(one.tracks.size() == many.tracks.size());
  CHECK(one.stats.events_seen == many.stats.events_seen);
  CHECK(one.stats.lost_bytes == many.stats.lost_bytes);
  CHECK(one.stats.recovered_errors == many.stats.recovered_errors);
  CHECK(one.stats.warnings == many.stats.warnings);
}

}  // namespace

TEST_CASE("loader windows: 4 threads read a 17 MB one-event-per-line trace as one thread does") {
  const std::string bytes = many_events(60000, false, false);
  Timeline one = load_with(bytes, 1), many = load_with(bytes, 4);
  CHECK(one.events.size() == 60000);
  CHECK(many.arg_string(59999, "Call stack") == "train.py(4): step");
  check_same(one, many);
}

TEST_CASE("loader windows: pretty-printed traces and broken events give the same timeline on any thread count") {
  const std::string bytes = many_events(60000, true, true);
  Timeline one = load_with(bytes, 1), many = load_with(bytes, 3);
  CHECK(one.events.size() == 60000 - 12);  // every 5000th event from the 2500th is lost to its quote
  CHECK(one.stats.recovered_errors == 12);
  check_same(one, many);
}

TEST_CASE("loader windows: a minified \"},{\" trace (windows copied) gives the same timeline on any thread count") {
  // Rewritten in one pass: replacing in place moves the rest of the 17 MB text at each event.
  const std::string lines = many_events(60000, false, true);
  std::string bytes;
  bytes.reserve(lines.size());
  size_t copied = 0;
  for (size_t at = lines.find(",\n  {"); at != std::string::npos; at = lines.find(",\n  {", at + 5)) {
    bytes.append(lines, copied, at - copied).append(",{");
    copied = at + 5;
  }
  bytes.append(lines, copied, std::string::npos);
  REQUIRE(bytes.find("},{") != std::string::npos);
  REQUIRE(bytes.find("},\n") == std::string::npos);
  Timeline one = load_with(bytes, 1), many = load_with(bytes, 3);
  CHECK(one.events.size() == 60000 - 12);
  CHECK(one.stats.recovered_errors == 12);
  CHECK(one.arg_string(0, "Call stack") == "train.py(0): step");
  check_same(one, many);
}
