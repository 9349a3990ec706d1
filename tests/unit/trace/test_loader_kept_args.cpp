// Keeping only some args keys at load (LoadOptions::arg_keys): the kept keys read back exactly as from
// the whole args object, the others are gone (and asking for them is an error), and the keys the code
// and the shipped rules read are all in the set the commands keep.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "input.h"
#include "numbers.h"
#include "trace_parser.h"
#include "big_trace.h"
#include "trace_builder.h"

using ptadvise::ArgKeySet;
using ptadvise::LoadOptions;
using ptadvise::Timeline;

namespace {

Timeline load_keeping(const std::string& bytes, ArgKeySet keys, unsigned threads = 0) {
  LoadOptions options;
  options.threads = threads;
  options.arg_keys = std::make_shared<const ArgKeySet>(std::move(keys));
  auto result = ptadvise::load_trace_bytes(bytes, "kept.json", options);
  REQUIRE(std::holds_alternative<Timeline>(result));
  return std::move(std::get<Timeline>(result));
}

Timeline load_all(const std::string& bytes, unsigned threads = 0) {
  LoadOptions options;
  options.threads = threads;
  auto result = ptadvise::load_trace_bytes(bytes, "all.json", options);
  REQUIRE(std::holds_alternative<Timeline>(result));
  return std::move(std::get<Timeline>(result));
}

}  // namespace

TEST_CASE("kept args: the code's keys plus the rules' make the set, each once") {
  constexpr size_t code_keys = std::size(ptadvise::kCodeArgKeys);
  CHECK(code_keys == 22);
  const ArgKeySet code = ptadvise::kept_arg_keys();
  CHECK(code.size() == code_keys);  // no key listed twice
  CHECK(code.contains("bytes"));
  CHECK(code.contains("Call stack"));
  CHECK_FALSE(code.contains("Total Reserved"));
  const ArgKeySet with_rules = ptadvise::kept_arg_keys({"Total Reserved", "bytes"});
  CHECK(with_rules.size() == code_keys + 1);
  CHECK(with_rules.contains("Total Reserved"));
}

TEST_CASE("kept args: kept keys read back as written, other keys are dropped, ids and names still read") {
  ptadvise::testing::TraceBuilder trace;
  trace.complete("kernel", "ncclDevKernel_AllReduce", 10, 5, "0", "7",
                 "\"correlation\": \"77\", \"External id\": 12, \"device\": 0, \"stream\": 7, "
                 "\"bytes\": \"1024\", \"Comms Id\": 18446744073709551615, \"ratio\": 0.25, "
                 "\"dims\": [[2, 3], [\"a]\"]], \"nothing\": null, \"label\": \"a\\\"b\", \"\\u0062ig\": 9");
  trace.cpu_op("aten::mm", 20, 5, "\"External id\": 3, \"Sequence number\": 4");
  const std::string bytes = trace.json();
  const Timeline timeline = load_keeping(bytes, {"bytes", "dims", "label", "nothing", "big", "ratio"});
  REQUIRE(timeline.events.size() == 2);
  const ptadvise::EventIndex kernel = timeline.name(0) == "aten::mm" ? 1 : 0;
  const ptadvise::EventIndex op = 1 - kernel;
  // Ids are read while the event is parsed, whatever is kept.
  CHECK(timeline.events.correlation[kernel] == 77);
  CHECK(timeline.events.external_id[kernel] == 12);
  CHECK(timeline.events.external_id[op] == 3);
  CHECK(timeline.tracks[timeline.events.track[kernel]].stream == 7);
  // The kept pairs, in file order, values as written; an escaped key is matched by its unescaped text.
  CHECK(timeline.args_json(kernel) ==
        "{\"bytes\":\"1024\",\"ratio\":0.25,\"dims\":[[2, 3], [\"a]\"]],\"nothing\":null,\"label\":\"a\\\"b\","
        "\"\\u0062ig\":9}");
  CHECK(timeline.arg_int(kernel, "bytes") == 1024);
  CHECK(timeline.arg_double(kernel, "ratio") == 0.25);
  CHECK(timeline.arg_string(kernel, "dims") == "[[2, 3], [\"a]\"]]");
  CHECK(timeline.arg_string(kernel, "nothing") == std::nullopt);
  CHECK(timeline.arg_string(kernel, "label") == "a\"b");
  CHECK(timeline.arg_int(kernel, "big") == 9);
  // No kept key: no args at all.
  CHECK(timeline.events.args_length[op] == 0);
  CHECK(timeline.arg_int(op, "bytes") == std::nullopt);
  // A key that was not kept cannot be asked for: a silent nullopt would hide a missing declaration.
  CHECK_THROWS_AS(timeline.arg_string(kernel, "Comms Id"), std::logic_error);
  CHECK_THROWS_AS(timeline.arg_int(op, "Sequence number"), std::logic_error);
  REQUIRE(timeline.kept_arg_keys != nullptr);
  CHECK(timeline.kept_arg_keys->size() == 6);

  // Everything else matches the load that keeps every key.
  const Timeline all = load_all(bytes);
  CHECK(all.kept_arg_keys == nullptr);
  CHECK(all.arg_string(kernel, "Comms Id") == "18446744073709551615");
  CHECK(all.events.ts_ns == timeline.events.ts_ns);
  CHECK(all.events.name == timeline.events.name);
  CHECK(all.events.track == timeline.events.track);
  CHECK(all.events.correlation == timeline.events.correlation);
  CHECK(all.events.parent == timeline.events.parent);
}

TEST_CASE("kept args: keys written with escapes anywhere are matched by their unescaped text") {
  const std::string bytes = R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
   "args": {"Input\u0020Dims": [[1]], "a\"b": 5, "s\u0074ream": 3, "\u0053eq": 4, "ab\"c": 6, "Seq2": 1, "xyz": [1, {"a": "}"}] }}
]})";
  const Timeline timeline = load_keeping(bytes, {"Input Dims", "a\"b", "stream", "Seq", "xyz"});
  REQUIRE(timeline.events.size() == 1);
  CHECK(timeline.args_json(0) ==
        R"({"Input\u0020Dims":[[1]],"a\"b":5,"s\u0074ream":3,"\u0053eq":4,"xyz":[1, {"a": "}"}]})");
  CHECK(timeline.arg_string(0, "Input Dims") == "[[1]]");
  CHECK(timeline.arg_int(0, "a\"b") == 5);
  CHECK(timeline.arg_int(0, "stream") == 3);
  CHECK(timeline.arg_int(0, "Seq") == 4);
  CHECK(timeline.arg_string(0, "xyz") == R"([1, {"a": "}"}])");  // the last field, nested
}

TEST_CASE("kept args: broken and skipped events leave no kept text behind, with 1 and 4 threads") {
  // 40,000 events over several 4 MiB windows; every 5,000th has an unescaped quote after its args, so its
  // window fails and is re-read event by event.
  std::string bytes = "{\"traceEvents\": [\n";
  for (size_t i = 0; i < 40000; ++i) {
    const bool broken = i % 5000 == 2500;
    bytes += std::string(i == 0 ? "" : ",\n") + "  {\"ph\": \"X\", \"cat\": \"kernel\", \"pid\": 0, \"tid\": 7, \"ts\": " +
             std::to_string(1000 + i * 10) + ", \"dur\": 5, \"args\": {\"bytes\": " + std::to_string(i) +
             ", \"grid\": [" + std::to_string(i % 7) + ", 1, 1], \"registers per thread\": 32, \"padding\": \"" +
             std::string(80, 'x') + "\"}, \"name\": \"" + (broken ? "k\"bad" : "gemm_" + std::to_string(i % 5)) + "\"}";
  }
  bytes += "\n]}\n";
  const Timeline all = load_all(bytes, 1);
  for (unsigned threads : {1u, 4u}) {
    CAPTURE(threads);
    const Timeline kept = load_keeping(bytes, {"bytes"}, threads);
    REQUIRE(kept.events.size() == 39992);
    REQUIRE(all.events.size() == kept.events.size());
    CHECK(kept.stats.recovered_errors == 8);
    // Each kept object is `{"bytes":N}`, one after another: nothing of the broken events in between.
    size_t total = 0;
    bool same = true;
    for (ptadvise::EventIndex e = 0; e < kept.events.size(); ++e) {
      total += kept.events.args_length[e];
      same = same && kept.arg_int(e, "bytes") == all.arg_int(e, "bytes") &&
             kept.args_json(e) == "{\"bytes\":" + std::to_string(*all.arg_int(e, "bytes")) + "}";
    }
    CHECK(same);
    CHECK(total == kept.buffer_size);
  }
}

namespace {

// The second argument of every call (or declaration) arg_int(...), arg_double(...), arg_string(...) in
// `source`, as written and trimmed. A hand scan: std::regex trips GCC 12's -Wmaybe-uninitialized under ASan.
std::vector<std::string> arg_call_keys(const std::string& source) {
  std::vector<std::string> keys;
  auto identifier = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  auto trim = [](std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    size_t start = 0;
    while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
    return text.substr(start);
  };
  for (const char* name : {"arg_int(", "arg_double(", "arg_string("}) {
    for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
      if (at > 0 && identifier(source[at - 1])) continue;
      size_t pos = at + std::string_view(name).size();
      int depth = 0;
      size_t comma = std::string::npos, close = std::string::npos;
      for (; pos < source.size() && close == std::string::npos; ++pos) {
        const char c = source[pos];
        if (c == '(') ++depth;
        if (c == ')' && depth-- == 0) close = pos;
        if (c == ',' && depth == 0 && comma == std::string::npos) comma = pos;
      }
      if (comma == std::string::npos || close == std::string::npos) continue;
      keys.push_back(trim(source.substr(comma + 1, close - comma - 1)));
    }
  }
  return keys;
}

}  // namespace

TEST_CASE("kept args: every fixed key the C++ code asks for is declared in kCodeArgKeys") {
  // Source scan: arg_int / arg_double / arg_string with a literal key must name a declared key; with a
  // variable key only the rules' own keys (RuleSet::arg_keys) may be used.
  const ArgKeySet declared = ptadvise::kept_arg_keys();
  size_t literal_calls = 0;
  for (const char* directory : {"trace", "job", "rules", "whatif", "advisor", "io", "cli", "capture"}) {
    const std::filesystem::path root = std::filesystem::path(PTADVISE_SOURCE_DIR) / directory;
    if (!std::filesystem::exists(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      const std::string extension = entry.path().extension().string();
      if (extension != ".cpp" && extension != ".h") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string source = text.str();
      for (const std::string& key : arg_call_keys(source)) {
        CAPTURE(entry.path().string());
        CAPTURE(key);
        if (key.size() >= 2 && key.front() == '"' && key.back() == '"') {
          ++literal_calls;
          CHECK(declared.contains(key.substr(1, key.size() - 2)));
        } else {
          CHECK((key == "predicate.key" || key == "metric.arg_key" || key == "std::string_view key"));
        }
      }
    }
  }
  CHECK(literal_calls >= 25);  // the scan does find the calls
}

TEST_CASE("kept args: the shipped rules' keys and a user rule's keys are kept") {
  auto shipped = ptadvise::load_rules({PTADVISE_SOURCE_DIR "/rules.d"});
  REQUIRE(std::holds_alternative<ptadvise::RuleSet>(shipped));
  const ArgKeySet keys = std::get<ptadvise::RuleSet>(shipped).arg_keys();
  for (const char* key : {"Input Dims", "Input type", "bytes", "Device Type", "Total Allocated", "Total Reserved"}) {
    CAPTURE(key);
    CHECK(keys.contains(key));
  }
  CHECK_FALSE(keys.contains("Input Dims[2]"));  // the element index is not part of the key

  const std::filesystem::path directory = std::filesystem::temp_directory_path() / "ptadvise_kept_args_rules";
  std::filesystem::create_directories(directory);
  {
    std::ofstream rule(directory / "mine.yaml");
    std::ifstream source(PTADVISE_SOURCE_DIR "/rules.d/memcpy/blocking-batch-copy.yaml");
    std::stringstream text;
    text << source.rdbuf();
    std::string yaml = text.str();
    const std::string from = "args: [{key: bytes, ge: 1MiB}]";
    REQUIRE(yaml.find(from) != std::string::npos);
    yaml.replace(yaml.find(from), from.size(), "args: [{key: \"my own key[1]\", ge: 1MiB}]");
    for (const auto& [shipped_field, own] : {std::pair{"id: PTA108", "id: PTA998"},
                                              std::pair{"name: blocking-batch-copy", "name: my-batch-copy"}}) {
      const std::string field = shipped_field;  // a rule of its own: another id and name
      REQUIRE(yaml.find(field) != std::string::npos);
      yaml.replace(yaml.find(field), field.size(), own);
    }
    rule << yaml;
  }
  auto mine = ptadvise::load_rules({directory.string()});
  std::filesystem::remove_all(directory);
  REQUIRE(std::holds_alternative<ptadvise::RuleSet>(mine));
  const ArgKeySet user = ptadvise::kept_arg_keys(std::get<ptadvise::RuleSet>(mine).arg_keys());
  CHECK(user.contains("my own key"));
  CHECK(user.contains("Call stack"));
}

TEST_CASE("kept args: a 90 MB file read as the parse goes on gives the timeline of the file read whole") {
  // Beyond the first read (16 MiB), the rest is read while windows are parsed and parsed windows are given
  // back; a broken event past 70 MiB makes the loader read the rest at once, and the top-level keys after
  // the events are read after them.
  const ptadvise::testing::BigTrace trace = ptadvise::testing::big_trace();
  const std::string& bytes = trace.text;
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "ptadvise_kept_args_big.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  LoadOptions keep;
  keep.arg_keys = std::make_shared<const ArgKeySet>(ArgKeySet{"bytes"});
  auto incremental = ptadvise::load_trace_file(path.string(), keep);
  auto whole = ptadvise::load_trace_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(std::holds_alternative<Timeline>(incremental));
  REQUIRE(std::holds_alternative<Timeline>(whole));
  const Timeline& kept = std::get<Timeline>(incremental);
  const Timeline& all = std::get<Timeline>(whole);
  CHECK(trace.broken_at > (size_t{70} << 20));
  CHECK(kept.stats.lost_bytes > 0);
  ptadvise::testing::check_same_big_trace(kept, all, bytes.size());
}

TEST_CASE("kept args: a file that shrinks while it is read incrementally is read as a file cut there") {
  // 70 MiB of events; after the first read (16 MiB) the file is cut to 66 MiB, as a writer rewriting it
  // in place would: the parse reads on to the new end and keeps the events before the cut.
  const std::string event = "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 1000, "
                            "\"dur\": 5, \"args\": {\"bytes\": 64, \"padding\": \"" + std::string(900, 'x') + "\"}}";
  std::string bytes = "{\"traceEvents\": [\n";
  size_t events = 0;
  while (bytes.size() < (size_t{70} << 20)) {
    bytes += (events++ == 0 ? "" : ",\n") + event;
  }
  bytes += "\n]}\n";
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "ptadvise_kept_args_shrinks.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  auto input = ptadvise::detail::read_input_file(path.string(), true);
  REQUIRE(input.ok());
  REQUIRE(input.pending != nullptr);
  CHECK(input.pending->filled() == ptadvise::detail::kFirstRead);
  CHECK(input.buffer.size == bytes.size());
  const size_t cut = size_t{66} << 20;
  std::filesystem::resize_file(path, cut);
  ptadvise::detail::TraceParser parser(std::move(input.buffer), std::move(input.pending), "shrinks.json", 1);
  LoadOptions options;
  options.arg_keys = std::make_shared<const ArgKeySet>(ArgKeySet{"bytes"});
  auto result = parser.run(options);
  std::filesystem::remove(path);
  REQUIRE(std::holds_alternative<Timeline>(result));
  const Timeline& timeline = std::get<Timeline>(result);
  size_t whole = 0;  // the events that end before the cut
  for (size_t end = 18 + event.size(); end <= cut; end += event.size() + 2) ++whole;
  CHECK(timeline.events.size() == whole);
  CHECK(timeline.stats.bytes == cut);
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0] == "shrinks.json: the file shrank from " + ptadvise::detail::with_commas(bytes.size()) +
                                          " to 69,206,016 bytes while it was read (was it being rewritten?)");
  CHECK(timeline.stats.warnings[1].find("shrinks.json: file ends inside an event at byte ") == 0);
  CHECK(timeline.arg_int(0, "bytes") == 64);
}
