// Windows of the event list read in place (the caller's thread patches the white space around a window and
// restores it) or from a copy (workers, and windows with no white space around them: minified "},{").
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "event_windows.h"

using ptadvise::detail::in_place_bytes;
using ptadvise::detail::kNotFound;
using ptadvise::detail::kWindowBytes;
using ptadvise::detail::window_limit;
using ptadvise::detail::WindowPool;
using ptadvise::detail::WindowResult;

namespace {

// `events` Kineto-like events of about 200 bytes: separated by ",\n  " (as Kineto writes them) or by ","
// alone (minified).
std::string event_list(size_t events, bool minified) {
  std::string out = minified ? "{\"traceEvents\":[" : "{\"traceEvents\": [\n  ";
  for (size_t i = 0; i < events; ++i) {
    if (i > 0) out += minified ? "," : ",\n  ";
    out += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"volta_sgemm_" + std::to_string(i % 31) +
           "\", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(1000 + i * 10) +
           ", \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(i) + "}}";
  }
  out += minified ? "]}" : "\n]}\n";
  return out;
}

struct Read {
  size_t events = 0, windows = 0, in_place = 0;
  bool closed = false;
};

// Reads the whole event list window after window, as the loader does when no event is broken.
Read read_windows(std::vector<char>& buffer, size_t size, unsigned workers) {
  char* data = buffer.data();
  WindowPool pool(data, size, buffer.size(), workers);
  Read read;
  size_t start = std::string_view(data, size).find('{', 1);
  while (!read.closed) {
    const size_t limit = window_limit(data, size, start);
    pool.read_ahead(start);
    WindowResult window = pool.take(start, limit);
    REQUIRE_FALSE(window.stage1_failed);
    // Taken in file order, whichever thread read them: the events go on where the last window ended.
    for (size_t e = 0; e < window.chunk.size(); ++e) REQUIRE(window.chunk.correlation[e] == int64_t(read.events + e));
    read.events += window.chunk.size();
    ++read.windows;
    read.in_place += window.in_place ? 1 : 0;
    read.closed = window.closed;
    if (read.closed) break;
    REQUIRE(window.last_object_end != kNotFound);
    start = std::string_view(data, size).find('{', window.last_object_end);
    REQUIRE(start != std::string_view::npos);
  }
  return read;
}

std::vector<char> padded(const std::string& text) {
  std::vector<char> buffer(text.begin(), text.end());
  buffer.resize(text.size() + 1 + simdjson::SIMDJSON_PADDING, '\0');
  return buffer;
}

}  // namespace

TEST_CASE("event windows: the bytes patched to read a window in place") {
  const std::string pretty = "[\n  {\"a\": 1},\n  {\"b\": 2}\n]";
  // The first window, [4, 16), ends before the second event: '[' goes on the space before it (byte 3), ']'
  // on the '\n' after its ',' (byte 13), so the second window can open on the space before it (byte 15).
  auto first = in_place_bytes(pretty.data(), pretty.size(), 4, 16);
  CHECK(first.open == 3);
  CHECK(first.close == 13);
  auto second = in_place_bytes(pretty.data(), pretty.size(), 16, pretty.size());
  CHECK(second.open == 15);
  CHECK(second.close == pretty.size());  // the file ends without white space: the spare byte after it
  const std::string list_start = "[{\"a\": 1}, {\"b\": 2}]\n";
  CHECK(in_place_bytes(list_start.data(), list_start.size(), 1, 11).open == 0);  // the list's own '['
  CHECK(in_place_bytes(list_start.data(), list_start.size(), 1, 11).close == 10);
  const std::string minified = "[{\"a\":1},{\"b\":2},{\"c\":3}]";
  CHECK(in_place_bytes(minified.data(), minified.size(), 1, 9).open == kNotFound);    // ends with ','
  CHECK(in_place_bytes(minified.data(), minified.size(), 9, 17).open == kNotFound);   // after a ','
  CHECK(in_place_bytes(minified.data(), minified.size(), 17, minified.size()).open == kNotFound);
}

TEST_CASE("event windows: Kineto's separators let the caller's thread read every window in place") {
  const std::string text = event_list(60000, false);
  REQUIRE(text.size() > 2 * kWindowBytes);
  std::vector<char> buffer = padded(text);
  Read alone = read_windows(buffer, text.size(), 0);
  CHECK(alone.events == 60000);
  CHECK(alone.windows == (text.size() + kWindowBytes - 1) / kWindowBytes);
  CHECK(alone.in_place == alone.windows);
  CHECK(std::string(buffer.data(), text.size()) == text);  // every patched byte restored
  CHECK(buffer[text.size()] == '\0');

  // With a worker: windows read ahead come from copies, the caller's own are read in place.
  Read shared = read_windows(buffer, text.size(), 1);
  CHECK(shared.events == 60000);
  CHECK(shared.windows == alone.windows);
  CHECK(shared.in_place <= shared.windows);
  CHECK(std::string(buffer.data(), text.size()) == text);
}

TEST_CASE("event windows: minified \"},{\" windows are read from copies, with the same events") {
  const std::string text = event_list(60000, true);
  REQUIRE(text.size() > 2 * kWindowBytes);
  std::vector<char> buffer = padded(text);
  Read alone = read_windows(buffer, text.size(), 0);
  CHECK(alone.events == 60000);
  CHECK(alone.windows >= 3);
  CHECK(alone.in_place == 0);
  Read shared = read_windows(buffer, text.size(), 1);
  CHECK(shared.events == 60000);
  CHECK(shared.in_place == 0);
  CHECK(std::string(buffer.data(), text.size()) == text);
}
