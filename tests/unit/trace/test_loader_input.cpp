// The loader on bad input (malformed events, cut files, unescaped quotes, non-UTF-8 bytes) and on every
// way in: gzip, directories, inputs larger than a parse window.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "loader_test_support.h"
#include "ptadvise/loader.h"

using namespace loader_test;  // the helpers and the ptadvise names they use

TEST_CASE("loader: malformed events are counted and skipped with one warning") {
  std::string text =
      "{\"traceEvents\": [\n"
      "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ok\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 2},\n"
      "  42,\n"
      "  {\"cat\": \"cpu_op\", \"name\": \"no phase\", \"ts\": 1, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"name\": \"bad ts\", \"ts\": {\"us\": 1}, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"name\": 7, \"ts\": 1, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"name\": \"no dur\", \"ts\": 1},\n"
      "  {\"ph\": \"X\", \"name\": \"huge ts\", \"ts\": 1e300, \"dur\": 1},\n"
      "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ok too\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 2}\n"
      "]}\n";
  Timeline timeline = load_ok(text);
  REQUIRE(timeline.events.size() == 2);
  CHECK(timeline.name(1) == "ok too");
  CHECK(timeline.stats.events_seen == 8);
  CHECK(timeline.stats.malformed_events == 6);
  CHECK(timeline.stats.warnings ==
        std::vector<std::string>{"trace.json: skipped 6 malformed events (first at byte " +
                                 std::to_string(text.find("42")) + ": expected an object for an event)"});
}

TEST_CASE("loader: bad input gives one-line errors naming the file and the position") {
  CHECK(load_error("") == "trace.json: the file is empty");
  CHECK(load_error("  \n ") == "trace.json: the file is empty");
  CHECK(load_error("{\"a\": 1}") == "trace.json: no \"traceEvents\" list: this JSON is not a PyTorch profiler trace");
  CHECK(load_error("[1, 2]") ==
        "trace.json: byte 1: expected an object for an event (none of the 2 entries of the event list is a usable "
        "event: is this a PyTorch profiler trace?)");
  CHECK(load_error("rules:\n  - id: PTA101\n") ==
        "trace.json: byte 0: expected a JSON object or array (this does not look like a PyTorch profiler trace)");
  CHECK(load_error("{\"traceEvents\": {\"a\": 1}}") == "trace.json: byte 16: expected an array for \"traceEvents\"");
  CHECK(load_error("{\"traceEvents\": []}") == "trace.json: the trace has no events");
  CHECK(load_error("{\"schemaVersion\": 1 \"traceEvents\": []}") ==
        "trace.json: byte 20: expected ',' or '}' after the value of \"schemaVersion\"");
  CHECK(load_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": }]}") ==
        "trace.json: byte 17: invalid JSON (an unescaped quote or backslash?) in an event");
  CHECK(load_error("{\"traceEvents\": [{\"ph\": \"X\", \xff\"name\": \"a\", \"ts\": 1, \"dur\": 1}]}") ==
        "trace.json: byte 17: invalid UTF-8 bytes in an event");
  CHECK(load_error("\x89PNG\r\n\x1a\n\0\0", "image.json") ==
        "image.json: byte 0: expected a JSON object or array (this does not look like a PyTorch profiler trace)");
  CHECK(load_error("{\"traceEvents\": [") == "trace.json: file ends before the first complete event");

  auto missing = ptadvise::load_trace_file("/nonexistent/dir/trace.json");
  REQUIRE(std::holds_alternative<LoadError>(missing));
  CHECK(std::get<LoadError>(missing).message == "/nonexistent/dir/trace.json: cannot open: No such file or directory");

  TempDir dir;
  dir.write("notes.txt", "not a trace");
  auto empty_dir = ptadvise::load_traces({dir.path.string()});
  REQUIRE(std::holds_alternative<LoadError>(empty_dir));
  CHECK(std::get<LoadError>(empty_dir).message ==
        dir.path.string() + ": no trace files (*.json, *.json.gz) in this directory or below");
  std::string empty_file = dir.write("empty.json", "");
  auto empty = ptadvise::load_trace_file(empty_file);
  REQUIRE(std::holds_alternative<LoadError>(empty));
  CHECK(std::get<LoadError>(empty).message == empty_file + ": the file is empty");
  auto directory = ptadvise::load_trace_file(dir.path.string());
  REQUIRE(std::holds_alternative<LoadError>(directory));
}

TEST_CASE("loader: invalid UTF-8 and unpaired surrogates in names are replaced, the events kept") {
  // A name cut inside a multi-byte character, Latin-1 text, a lone \ud800: the event's time counts, its
  // name shows '?' (each invalid byte) or U+FFFD (each unpaired surrogate escape). Skipping such events
  // lost every launch of a kernel whose name carried one, with all its GPU time.
  TraceBuilder trace;
  trace.cpu_op("before", 10, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf\xe9 \xe2\x82 x\", \"pid\": 1, \"tid\": 1, "
                  "\"ts\": 11, \"dur\": 1}");
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\\ud800b\\udfff\\ud83d\\ude00\", \"pid\": 1, "
                  "\"tid\": 1, \"ts\": 12, \"dur\": 1}");
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\", \"pid\": 1, "
                  "\"tid\": 1, \"ts\": 13, \"dur\": 1}");
  // Outside a string no replacement makes JSON of it: skipped as before.
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \xff\"name\": \"lost\", \"pid\": 1, \"tid\": 1, \"ts\": 14, "
                  "\"dur\": 1}");
  trace.cpu_op("after", 15, 1);
  const std::string text = trace.json();
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 5);
  CHECK(timeline.name(0) == "before");
  CHECK(timeline.name(1) == "caf? ?? x");
  CHECK(timeline.name(2) == "a\xef\xbf\xbd" "b\xef\xbf\xbd\xf0\x9f\x98\x80");
  CHECK(timeline.name(3) == "?????????");  // overlong, an encoded surrogate, past U+10FFFF
  CHECK(timeline.name(4) == "after");
  CHECK(timeline.stats.recovered_errors == 1);
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0].find(": invalid UTF-8 bytes in an event; skipped ") != std::string::npos);
  CHECK(timeline.stats.warnings[1] ==
        "trace.json: read 3 events with invalid UTF-8 bytes or unpaired surrogate escapes replaced by '?' or "
        "U+FFFD (first at byte " + std::to_string(text.find("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf")) + ")");
}

TEST_CASE("loader: a file cut inside an event keeps the events before the cut") {
  TraceBuilder trace;
  for (int i = 0; i < 10; ++i) trace.cpu_op("op" + std::to_string(i), 10 * i, 5);
  std::string text = trace.json();
  size_t cut = text.find("\"op7\"");
  std::string truncated = text.substr(0, cut);
  size_t event_start = truncated.rfind('{');
  Timeline timeline = load_ok(truncated);
  CHECK(timeline.events.size() == 7);
  CHECK(timeline.name(6) == "op6");
  CHECK(timeline.stats.truncated_bytes == truncated.size() - event_start);
  CHECK(timeline.stats.warnings ==
        std::vector<std::string>{"trace.json: file ends inside an event at byte " + std::to_string(event_start) +
                                 "; kept 7 events, lost " + std::to_string(truncated.size() - event_start) +
                                 " bytes"});

  // Cut between events: nothing lost but the closing brackets.
  std::string between = text.substr(0, text.find("{\"ph\"", text.find("\"op8\"")));
  Timeline kept = load_ok(between);
  CHECK(kept.events.size() == 9);
  CHECK(kept.stats.truncated_bytes == 0);
  CHECK(kept.stats.warnings ==
        std::vector<std::string>{"trace.json: file ends inside the event list (no closing ']'); kept 9 events"});
}

TEST_CASE("loader: unescaped quotes and backslashes in names are skipped by resynchronising") {
  TraceBuilder trace;
  trace.cpu_op("first", 10, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"say \"hi\"\", \"pid\": 1, \"tid\": 1, \"ts\": 11, "
                  "\"dur\": 1}");
  trace.cpu_op("middle", 12, 1);
  trace.raw_event("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"C:\\path\", \"pid\": 1, \"tid\": 1, \"ts\": 13, "
                  "\"dur\": 1}");
  trace.cpu_op("last", 14, 1);
  Timeline timeline = trace.load();
  REQUIRE(timeline.events.size() == 3);
  CHECK(timeline.name(0) == "first");
  CHECK(timeline.name(1) == "middle");
  CHECK(timeline.name(2) == "last");
  CHECK(timeline.stats.recovered_errors == 2);
  CHECK(timeline.stats.malformed_events == 0);
  std::string text = trace.json();
  size_t quote_event = text.find("\n  {", text.find("\"first\"")) + 3;
  size_t middle_event = text.rfind("\n  {", text.find("\"middle\"")) + 3;
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0].find("; skipped that event (byte " + std::to_string(quote_event) + ", " +
                                        std::to_string(middle_event - quote_event) + " bytes) and resumed at byte " +
                                        std::to_string(middle_event)) != std::string::npos);
}

TEST_CASE("loader: gzip input, including multi-member streams, from bytes and from files") {
  TraceBuilder trace = step_trace(Era::Kineto2023);
  std::string text = trace.json();
  Timeline from_bytes = load_ok(gzip(text));
  CHECK(from_bytes.events.size() == 5);
  CHECK(from_bytes.stats.bytes == text.size());

  std::string members = gzip(text.substr(0, 100)) + gzip(text.substr(100));
  Timeline from_members = load_ok(members);
  CHECK(from_members.events.size() == 5);

  TempDir dir;
  std::string path = dir.write("trace.json.gz", members);
  auto from_file = ptadvise::load_trace_file(path);
  REQUIRE(std::holds_alternative<Timeline>(from_file));
  CHECK(std::get<Timeline>(from_file).events.size() == 5);
  CHECK(std::get<Timeline>(from_file).path == path);

  std::string corrupt = gzip(text);
  corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 0x55);
  corrupt.resize(corrupt.size() - 12);
  // Damaged in the middle: what inflates before the damage is used, with a warning (like a cut file).
  auto damaged = ptadvise::load_trace_bytes(corrupt, "trace.json");
  REQUIRE(std::holds_alternative<Timeline>(damaged));
  CHECK(std::get<Timeline>(damaged).stats.warnings.at(0).find(
            "trace.json: the gzip data is cut short or damaged after compressed byte ") == 0);
  // Nothing inflates at all: an error.
  CHECK(load_error(std::string("\x1f\x8b\x08\x00garbage garbage garbage")) ==
        "trace.json: corrupt gzip data at compressed byte 0");
}

TEST_CASE("loader: directories load one timeline per file, ranked by distributedInfo, file name, then order") {
  TempDir dir;
  TraceBuilder with_rank;
  with_rank.distributed(2, 4).cpu_op("a", 1, 1);
  dir.write("zzz.json", with_rank.json());
  TraceBuilder plain;
  plain.cpu_op("b", 1, 1);
  dir.write("trace_rank-1.json", plain.json());
  dir.write("trace_rank_0.json.gz", gzip(plain.json()));
  dir.write("worker.json", plain.json());  // no rank anywhere: its position in the sorted listing
  dir.write("README.md", "# not a trace");
  auto result = ptadvise::load_traces({dir.path.string()});
  REQUIRE(std::holds_alternative<std::vector<Timeline>>(result));
  const auto& timelines = std::get<std::vector<Timeline>>(result);
  REQUIRE(timelines.size() == 4);
  CHECK(timelines[0].rank == 0);
  CHECK(timelines[0].path == (dir.path / "trace_rank_0.json.gz").string());
  CHECK(timelines[1].rank == 1);
  CHECK(timelines[2].rank == 2);
  CHECK(timelines[2].path == (dir.path / "worker.json").string());
  CHECK(timelines[3].rank == 2);
  CHECK(timelines[3].path == (dir.path / "zzz.json").string());
}

TEST_CASE("loader: every command sees the same files of a directory: below it too, other JSON left out") {
  // TensorBoard's logdir/<run>/ layout: load_traces (summary, report, whatif, diff) lists as check does.
  TempDir dir;
  TraceBuilder plain;
  plain.cpu_op("b", 1, 1);
  std::filesystem::create_directories(dir.path / "run_a");
  dir.write("run_a/host_1.pt.trace.json", plain.json());
  dir.write("run_a/host_2.pt.trace.json", plain.json());
  dir.write("hparams.json", "{\"lr\": 0.1}");
  auto listed = ptadvise::list_trace_inputs({dir.path.string()});
  REQUIRE(std::holds_alternative<std::vector<ptadvise::TraceInput>>(listed));
  CHECK(std::get<std::vector<ptadvise::TraceInput>>(listed).size() == 3);

  std::vector<std::string> left_out;
  ptadvise::LoadOptions options;
  options.on_not_a_trace = [&](const std::string& message) { left_out.push_back(message); };
  auto result = ptadvise::load_traces({dir.path.string()}, options);
  REQUIRE(std::holds_alternative<std::vector<Timeline>>(result));
  const auto& timelines = std::get<std::vector<Timeline>>(result);
  REQUIRE(timelines.size() == 2);
  CHECK(timelines[0].rank == 0);  // no rank anywhere: the order of the loaded files of the directory
  CHECK(timelines[1].rank == 1);
  CHECK(timelines[1].path == (dir.path / "run_a" / "host_2.pt.trace.json").string());
  REQUIRE(left_out.size() == 1);
  CHECK(left_out[0].find("hparams.json") != std::string::npos);

  // Named on its own, the same document is an error; without the callback too.
  auto named = ptadvise::load_traces({(dir.path / "hparams.json").string()}, options);
  CHECK(std::holds_alternative<ptadvise::LoadError>(named));
  CHECK(std::holds_alternative<ptadvise::LoadError>(ptadvise::load_traces({dir.path.string()})));

  // Nothing left once the other documents are out: an error, not an empty result.
  TempDir only_other;
  only_other.write("a.json", "{\"lr\": 0.1}");
  only_other.write("b.json", "{\"epochs\": 3}");
  auto nothing = ptadvise::load_traces({only_other.path.string()}, options);
  REQUIRE(std::holds_alternative<ptadvise::LoadError>(nothing));
  CHECK(std::get<ptadvise::LoadError>(nothing).message == "no PyTorch profiler trace among the 2 JSON files found");
}

TEST_CASE("loader: traces larger than one parse window, minified or with one huge event") {
  TraceBuilder trace;
  const int count = 60000;  // about 7.5 MB: two windows and more
  for (int i = 0; i < count; ++i) trace.cpu_op("op" + std::to_string(i % 100), i, 1, "\"External id\": " + std::to_string(i));
  std::string text = trace.json();
  REQUIRE(text.size() > (size_t{6} << 20));
  Timeline timeline = load_ok(text);
  REQUIRE(timeline.events.size() == count);
  CHECK(timeline.events.external_id[count - 1] == count - 1);
  CHECK(timeline.events.ts_ns[count - 1] == int64_t{count - 1} * 1000);
  CHECK(timeline.stats.warnings.empty());

  std::string minified;
  minified.reserve(text.size());
  for (char c : text) {
    if (c != '\n') minified += c;
  }
  Timeline from_minified = load_ok(minified);
  CHECK(from_minified.events.size() == count);
  CHECK(from_minified.stats.warnings.empty());

  std::string cut = text.substr(0, text.size() / 2);
  Timeline from_cut = load_ok(cut);
  CHECK(from_cut.stats.truncated_bytes > 0);
  CHECK(from_cut.stats.truncated_bytes < 300);
  CHECK(from_cut.events.size() > count / 2 - 200);

  TraceBuilder huge;
  huge.cpu_op("small", 1, 1);
  huge.cpu_op("big", 2, 1, "\"Call stack\": \"" + std::string(5 << 20, 'x') + "\"");
  huge.cpu_op("small again", 3, 1);
  Timeline from_huge = huge.load();
  REQUIRE(from_huge.events.size() == 3);
  CHECK(from_huge.arg_string(1, "Call stack")->size() == (size_t{5} << 20));
  CHECK(from_huge.stats.warnings.empty());
}
