// The same trace written in another event order gets the same report. Kineto writes a thread's ops after
// the ops inside them and the GPU's events after the host's; other writers (merging tools, converters, a
// user's own script) sort by time or keep no order at all. Every tie the analysis breaks (which op encloses
// another of the same start and length, which thread carries the steps, which event stands for a site,
// which evidence is shown) must fall the same way for all of them.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gzip_bytes.h"
#include "ptadvise/advisor.h"
#include "temp_dir.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

namespace {

// The text of a trace cut around its event list: before the first event, the events as written, after
// the last one. nullopt when the text is not one JSON document with a non-empty event list.
struct EventList {
  std::string before, after;
  std::vector<std::string_view> events;
  std::vector<double> ts;  // each event's "ts" (0 when it has none)
};

std::optional<EventList> split_event_list(const simdjson::padded_string& text) {
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser.iterate(text).get(doc)) return std::nullopt;
  simdjson::ondemand::array list;
  simdjson::ondemand::json_type type;
  if (doc.type().get(type)) return std::nullopt;
  if (type == simdjson::ondemand::json_type::array) {
    if (doc.get_array().get(list)) return std::nullopt;
  } else if (doc["traceEvents"].get_array().get(list)) {
    return std::nullopt;
  }
  EventList out;
  const char* begin = text.data();
  const char* first = nullptr;
  const char* last_end = nullptr;
  for (auto element : list) {
    simdjson::ondemand::object event;
    std::string_view raw;
    if (element.get_object().get(event) || event.raw_json().get(raw)) return std::nullopt;
    // Read by hand: a second document on the same parser would end the walk of this one.
    double ts = 0;
    const size_t at = raw.find("\"ts\"");
    if (at != std::string_view::npos) {
      size_t k = raw.find(':', at) + 1;
      while (k < raw.size() && (raw[k] == ' ' || raw[k] == '"')) ++k;
      ts = std::strtod(std::string(raw.substr(k, 40)).c_str(), nullptr);
    }
    if (first == nullptr) first = raw.data();
    last_end = raw.data() + raw.size();
    out.events.push_back(raw);
    out.ts.push_back(ts);
  }
  if (out.events.empty()) return std::nullopt;
  out.before.assign(begin, first);
  out.after.assign(last_end, begin + text.size());
  return out;
}

std::string write_events(const EventList& list, const std::vector<size_t>& order) {
  std::string out = list.before;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0) out += ",\n";
    out += list.events[order[k]];
  }
  return out + list.after;
}

// `check --format json` on one file, without what names the file or counts its bytes.
nlohmann::json check_report(const std::string& path) {
  ptadvise::CheckOptions options;
  options.traces = {path};
  options.format = "json";
  options.exit_zero = true;
  options.accept_partial = true;
  options.threads = 1;
  std::ostringstream out, err;
  REQUIRE(ptadvise::run_check(options, out, err) == 0);
  nlohmann::json report = nlohmann::json::parse(out.str());
  std::string dump = report.dump();
  for (size_t at = dump.find(path); at != std::string::npos; at = dump.find(path, at)) dump.replace(at, path.size(), "TRACE");
  report = nlohmann::json::parse(dump);
  // The event order changes the file's size only.
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& node) {
    if (node.is_object()) {
      node.erase("bytes");
      for (auto& [key, value] : node.items()) strip(value);
    } else if (node.is_array()) {
      for (auto& value : node) strip(value);
    }
  };
  strip(report);
  return report;
}

}  // namespace

// Up to a few MB compressed: the large ones add time, not kinds of ties. Under the sanitizers, which run
// this suite for memory errors after the plain build ran it whole, up to 1 MiB: the 16 traces above it
// took three quarters of its 150 s there.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kLargestTrace = size_t{1} << 20;
#else
constexpr size_t kLargestTrace = size_t{4} << 20;
#endif

TEST_CASE("corpus: a trace's report does not depend on the order its events are written in") {
  const std::filesystem::path corpus = std::string(PTADVISE_SHARED_DIR) + "/traces";
  std::vector<std::filesystem::path> traces;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(corpus, ec)) {
    const std::string name = entry.path().filename().string();
    if ((name.ends_with(".json") || name.ends_with(".json.gz")) && entry.file_size() < kLargestTrace) {
      traces.push_back(entry.path());
    }
  }
  if (traces.empty()) {
    MESSAGE("skipped: the trace corpus " << corpus.string() << " is not there");
    return;
  }
  std::sort(traces.begin(), traces.end());
  ptadvise::testing::TempDir dir;
  size_t compared = 0;
  for (const auto& trace : traces) {
    CAPTURE(trace.filename().string());
    const simdjson::padded_string text(ptadvise::testing::gunzip_file(trace.string()));
    const std::optional<EventList> list = split_event_list(text);
    if (!list) continue;  // not one clean JSON document (a Kineto quirk the loader recovers from)
    // Same file name in its own directory: a rank read from the name stays the same.
    const std::string copy = dir.file("original/" + trace.filename().string());
    std::filesystem::create_directories(dir.file("original"));
    std::vector<size_t> order(list->events.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::ofstream(copy) << write_events(*list, order);
    const nlohmann::json expected = check_report(copy);

    std::vector<size_t> by_time = order;
    std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) { return list->ts[a] < list->ts[b]; });
    std::vector<size_t> reversed(order.rbegin(), order.rend());
    for (const auto& [label, variant] : {std::pair{"sorted by time", by_time}, std::pair{"reversed", reversed}}) {
      CAPTURE(label);
      const std::string path = dir.file(std::string(label == std::string("reversed") ? "reversed/" : "by_time/") +
                                        trace.filename().string());
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      std::ofstream(path) << write_events(*list, variant);
      const nlohmann::json got = check_report(path);
      if (got != expected) {
        const nlohmann::json patch = nlohmann::json::diff(expected, got);
        FAIL_CHECK("the report changed with the event order: " << patch.dump().substr(0, 2000));
      }
      ++compared;
    }
  }
  MESSAGE(compared << " reordered traces compared");
  CHECK(compared >= 40);
}
