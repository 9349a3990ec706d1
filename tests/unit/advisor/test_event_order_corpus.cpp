// The same trace written in another event order gets the same report. Kineto writes a thread's ops after
// the ops inside them and the GPU's events after the host's; other writers (merging tools, converters, a
// user's own script) sort by time or keep no order at all. Every tie the analysis breaks (which op encloses
// another of the same start and length, which thread carries the steps, which event stands for a site,
// which evidence is shown) must fall the same way for all of them. Likewise for the order of the keys in
// an event and its args, and for the numbers the host's processes and threads and the GPU's streams happen
// to have: another machine's recording of the same program has other pids, tids and stream ids, and
// nothing may depend on which is smaller.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "corpus_traces.h"
#include "ptadvise/advisor.h"
#include "temp_dir.h"
#include "trace_text.h"

// Needs ../shared/traces: ctest runs this suite as the `corpus` test, reported skipped without it.
TEST_SUITE_BEGIN("corpus");

namespace {

using ptadvise::testing::EventList;
using ptadvise::testing::FieldText;

bool host_category(std::string_view category) {
  static const std::set<std::string_view> host{"cpu_op",          "Operator",    "user_annotation", "python_function",
                                               "cuda_runtime",    "Runtime",     "cuda_driver",     "cpu_instant_event"};
  return host.contains(category);
}

// Host process and thread ids renamed so that their order is reversed: id -> kRenameBase - id; GPU streams
// (below kStreamLimit) likewise: stream -> kStreamBase - stream.
constexpr int64_t kRenameBase = int64_t{1} << 40;
constexpr int64_t kStreamBase = 100000, kStreamLimit = 10000;

std::optional<int64_t> as_int(const std::string& text) {
  if (text.empty() || text.size() > 15 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(text);
}

// A field's value as written ("" when absent).
std::string value_of(const std::vector<FieldText>& fields, std::string_view key) {
  const FieldText* field = ptadvise::testing::find_field(fields, key);
  return field == nullptr ? std::string() : std::string(field->value);
}

// The fields of an event or of its args; a trace that simdjson walked has only well-formed objects.
std::vector<FieldText> object_fields_or_fail(simdjson::ondemand::parser& parser, std::string_view raw) {
  auto fields = ptadvise::testing::object_fields(parser, raw);
  if (!fields) FAIL("not an object, in a trace simdjson walked: " << raw.substr(0, 200));
  return std::move(*fields);
}

struct Renamed {
  std::map<int64_t, int64_t> host_ids;  // new id -> old id
  std::map<int64_t, int64_t> streams;   // new stream -> old stream
};

// Each event, and its args, with their keys in reverse order; the integer pids and tids of the host's
// processes (those of host events, never of a GPU's) and the GPU streams renamed in reverse order.
std::string rewrite_keys_and_ids(const EventList& list, Renamed& renamed) {
  simdjson::ondemand::parser parser;
  std::vector<std::vector<FieldText>> events;
  std::set<int64_t> host_pids, gpu_pids;
  for (std::string_view raw : list.events) {
    std::vector<FieldText> fields = object_fields_or_fail(parser, raw);
    const std::string_view category = ptadvise::testing::string_field(fields, "cat");
    if (const auto pid = as_int(value_of(fields, "pid"))) {
      if (ptadvise::testing::gpu_side_category(category)) gpu_pids.insert(*pid);
      if (host_category(category)) host_pids.insert(*pid);
    }
    events.push_back(std::move(fields));
  }
  for (int64_t pid : gpu_pids) host_pids.erase(pid);
  auto stream = [&renamed](const std::string& value) {
    const auto id = as_int(value);
    if (!id || *id >= kStreamLimit) return value;
    renamed.streams[kStreamBase - *id] = *id;
    return std::to_string(kStreamBase - *id);
  };
  // Reserved once: grown as it goes, the copies of tens of MB were a quarter of this test's time.
  size_t bytes = list.before.size() + list.after.size();
  for (std::string_view raw : list.events) bytes += raw.size() + 64;
  std::string out;
  out.reserve(bytes);
  out += list.before;
  for (size_t e = 0; e < events.size(); ++e) {
    if (e > 0) out += ",\n";
    const auto pid = as_int(value_of(events[e], "pid"));
    const bool host = pid && host_pids.contains(*pid);
    const std::string phase = value_of(events[e], "ph");
    // A GPU track's tid is its stream: on the GPU's events, its name and sort index, its flow ends.
    const bool gpu_track = pid && gpu_pids.contains(*pid) &&
                           (ptadvise::testing::gpu_side_category(ptadvise::testing::string_field(events[e], "cat")) ||
                            phase == "\"M\"" || phase == "\"s\"" || phase == "\"f\"" || phase == "\"t\"");
    out += "{";
    for (size_t k = events[e].size(); k-- > 0;) {
      const FieldText& f = events[e][k];
      std::string value(f.value);
      if (host && (f.key == "pid" || f.key == "tid")) {
        if (auto id = as_int(value)) {
          renamed.host_ids[kRenameBase - *id] = *id;
          value = std::to_string(kRenameBase - *id);
        }
      } else if (gpu_track && f.key == "tid") {
        value = stream(value);
      } else if (f.key == "args" && value.starts_with("{")) {
        const std::vector<FieldText> args = object_fields_or_fail(parser, f.value);  // views into the trace
        value = "{";
        for (size_t a = args.size(); a-- > 0;) {
          const bool names_stream = args[a].key == "stream" || args[a].key == "wait_on_stream";
          value += args[a].key_text;
          value += ": ";
          value += names_stream ? stream(std::string(args[a].value)) : std::string(args[a].value);
          if (a > 0) value += ", ";
        }
        value += "}";
      }
      out += f.key_text;
      out += ": ";
      out += value;
      if (k > 0) out += ", ";
    }
    out += "}";
  }
  out += list.after;
  return out;
}

// The report with the renamed ids and streams given back their old numbers: host ids wherever a number
// of their length is written, streams where the report names a stream. (Scanned by hand: std::regex
// trips GCC's uninitialised-use warning under the sanitizers.)
nlohmann::json with_ids_restored(const nlohmann::json& report, const Renamed& renamed) {
  const std::string text = report.dump();
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string restored;
  size_t i = 0;
  while (i < text.size()) {
    if (!digit(text[i]) || (i > 0 && word(text[i - 1]))) {
      restored += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && digit(text[end])) ++end;
    const std::string number = text.substr(i, end - i);
    std::string replacement = number;
    if (end == text.size() || !word(text[end])) {
      const bool after_stream = restored.ends_with("stream ") || restored.ends_with("\"stream\":");
      const std::map<int64_t, int64_t>& names = after_stream ? renamed.streams : renamed.host_ids;
      if (number.size() <= 15 && (after_stream || (number.size() >= 12 && number.size() <= 14))) {
        const auto found = names.find(std::stoll(number));
        if (found != names.end()) replacement = std::to_string(found->second);
      }
    }
    restored += replacement;
    i = end;
  }
  return nlohmann::json::parse(restored);
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

// Under 4 MiB on disk: the large ones add time, not kinds of ties. Under the sanitizers, which run this
// suite for memory errors after the plain build ran it whole, up to 1 MiB (sanitized_run_reads): the 16
// traces above it took three quarters of its 150 s there.
constexpr uintmax_t kLargestTrace = (uintmax_t{4} << 20) - 1;

TEST_CASE("corpus: a trace's report does not depend on the order its events are written in") {
  if (!ptadvise::testing::corpus_traces()) return;
  const std::vector<std::filesystem::path> traces = ptadvise::testing::corpus_trace_files(kLargestTrace);
  ptadvise::testing::TempDir dir;
  size_t compared = 0, rewritten = 0, renamed_ids = 0, renamed_streams = 0;
  for (const auto& trace : traces) {
    CAPTURE(trace.filename().string());
    const std::string text = ptadvise::testing::read_trace_text(trace.string());
    const std::optional<EventList> list = ptadvise::testing::split_event_list(text);
    if (!list) continue;  // not one clean JSON document (a Kineto quirk the loader recovers from)
    // Same file name in its own directory: a rank read from the name stays the same.
    const std::string copy = dir.file("original/" + trace.filename().string());
    std::filesystem::create_directories(dir.file("original"));
    std::vector<size_t> order(list->events.size());
    std::iota(order.begin(), order.end(), size_t{0});
    ptadvise::testing::write_events_file(copy, *list, order);
    const nlohmann::json expected = check_report(copy);

    std::vector<size_t> by_time = order;
    std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) { return list->ts[a] < list->ts[b]; });
    std::vector<size_t> reversed(order.rbegin(), order.rend());
    for (const auto& rewrite : {std::pair{"sorted by time", by_time}, std::pair{"reversed", reversed}}) {
      // Named, not a structured binding: CAPTURE's lambda cannot capture a binding under clang < 16.
      const char* const label = rewrite.first;
      const std::vector<size_t>& variant = rewrite.second;
      CAPTURE(label);
      const std::string path = dir.file(std::string(label == std::string("reversed") ? "reversed/" : "by_time/") +
                                        trace.filename().string());
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      ptadvise::testing::write_events_file(path, *list, variant);
      const nlohmann::json got = check_report(path);
      if (got != expected) {
        const nlohmann::json patch = nlohmann::json::diff(expected, got);
        FAIL_CHECK("the report changed with the event order: " << patch.dump().substr(0, 2000));
      }
      ++compared;
    }
    Renamed renamed;
    const std::string rewritten_text = rewrite_keys_and_ids(*list, renamed);
    const std::string path = dir.file("renamed/" + trace.filename().string());
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << rewritten_text;
    const nlohmann::json got = with_ids_restored(check_report(path), renamed);
    if (got != expected) {
      const nlohmann::json patch = nlohmann::json::diff(expected, got);
      FAIL_CHECK("the report changed with the keys' order and the host's ids and streams: "
                 << patch.dump().substr(0, 2000));
    }
    renamed_ids += renamed.host_ids.size();
    renamed_streams += renamed.streams.size();
    ++rewritten;
  }
  MESSAGE(compared << " reordered traces compared, " << rewritten << " with their keys reordered, " << renamed_ids
                   << " host ids and " << renamed_streams << " GPU streams renamed");
  CHECK(compared >= 40);
  CHECK(rewritten >= 20);
  CHECK(renamed_ids >= 40);
  CHECK(renamed_streams >= 40);
}
