#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gzip_bytes.h"
#include "ptadvise/advisor.h"
#include "python_check.h"
#include "sample_report.h"
#include "temp_dir.h"

using namespace ptadvise;

namespace {

// Deliberately odd but valid formatting, a key that merely contains "traceEvents", and a nested
// traceEvents key that must not be taken for the top-level one.
const std::string kTrace =
    "{\n  \"schemaVersion\": 1,\n  \"note\": \"traceEvents [ inside a string\",\n"
    "  \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU\", \"x\": {\"traceEvents\": [1]}}],\n"
    "  \"traceEvents\"  :   [ \n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1700000000100, "
    "\"dur\": 5.5, \"args\": {\"Ev Idx\": 3}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\\\"q\", \"pid\": 0, \"tid\": 7, \"ts\": 1700000000110, \"dur\": 2}\n"
    "  ],\n  \"traceName\": \"x\"\n}\n";

std::vector<Finding> ranked_findings() {
  auto findings = testing::sample_findings();
  rank_findings(findings);
  return findings;
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(file) == Z_OK);
}

// Strict: the file must start with the gzip magic (gzread alone passes plain files through).
std::string read_gzip(const std::string& path) {
  std::string raw = testing::read_file(path);
  REQUIRE(raw.size() > 2);
  REQUIRE(static_cast<unsigned char>(raw[0]) == 0x1f);
  REQUIRE(static_cast<unsigned char>(raw[1]) == 0x8b);
  return testing::gunzip_file(path);
}

}  // namespace

TEST_CASE("annotation events: a findings process, one track per finding, an X event per evidence") {
  auto findings = ranked_findings();
  const auto events = nlohmann::json::parse("[" + annotation_events(findings) + "]");
  CHECK(events[0] == nlohmann::json{{"ph", "M"}, {"name", "process_name"}, {"pid", 1000000000}, {"tid", 0},
                                    {"args", {{"name", "ptadvise findings"}}}});
  bool named = false;
  size_t x_events = 0;
  for (const auto& e : events) {
    named = named || (e["name"] == "thread_name" && e["tid"] == 1 && e["args"]["name"] == "#1 PTA101 item-sync-in-step");
    if (e["ph"] != "X") continue;
    ++x_events;
    CHECK(e["pid"] == 1000000000);
    CHECK(e["cat"] == "ptadvise");
  }
  CHECK(named);
  // The first evidence of #1 at the file's own ts (µs as written), 50 µs long.
  const auto& first = *std::find_if(events.begin(), events.end(), [](const auto& e) { return e["ph"] == "X"; });
  CHECK(first["name"] == "PTA101 item-sync-in-step");
  CHECK(first["tid"] == 1);
  CHECK(first["ts"].dump() == "1700000000123");
  CHECK(first["dur"] == 50);
  CHECK(first["args"]["rule"] == "PTA101");
  CHECK(x_events == 5);  // 2 + 1 + 1 + 1 evidence items; the finding without evidence has no track
  CHECK(annotation_events(findings).find("tiny-kernel-storm") == std::string::npos);
  CHECK(annotation_events({}).empty());
}

TEST_CASE("annotation events keep ns in the file's time base") {
  auto findings = ranked_findings();
  findings[0].evidence.resize(1);
  findings[0].evidence[0].file_ts_ns = 88511388202755;  // relative ts, as with baseTimeNanoseconds
  findings[0].evidence[0].dur_ns = 1500;
  const auto events = nlohmann::json::parse("[" + annotation_events(findings) + "]");
  const auto& first = *std::find_if(events.begin(), events.end(), [](const auto& e) { return e["ph"] == "X"; });
  CHECK(first["ts"].dump() == "88511388202.755");
  CHECK(first["dur"].dump() == "1.5");
}

TEST_CASE("annotated trace keeps every original byte and splices the findings into traceEvents") {
  testing::TempDir dir;
  std::string trace = dir.write("trace.json", kTrace);
  auto findings = ranked_findings();
  std::string out = dir.file("annotated.json");
  auto error = write_annotated_trace(trace, findings, out);
  REQUIRE_MESSAGE(!error, (error ? error->message : ""));
  std::string annotated = testing::read_file(out);
  std::string events = annotation_events(findings);
  size_t bracket = kTrace.find("[ \n  {\"ph\"");
  std::string expected = kTrace.substr(0, bracket + 1) + "\n" + events + "," + kTrace.substr(bracket + 1);
  CHECK(annotated == expected);

  if (testing::python_has("json")) {
    CHECK(testing::run_python("import json,sys; d=json.load(open(sys.argv[1])); e=d[\"traceEvents\"]; "
                              "assert len(e)==2+15; assert e[-1][\"name\"]==\"k\\\"q\"; "
                              "assert any(x.get(\"pid\")==1000000000 and x[\"ph\"]==\"X\" for x in e)",
                              out) == 0);
  }
}

TEST_CASE("annotated trace from gzip input, plain or gzip output by extension, bare arrays, empty arrays") {
  testing::TempDir dir;
  auto findings = ranked_findings();
  std::string events = annotation_events(findings);
  std::string gz = dir.file("trace.json.gz");
  write_gzip(gz, kTrace);

  REQUIRE(!write_annotated_trace(gz, findings, dir.file("plain.json")));
  std::string plain = testing::read_file(dir.file("plain.json"));
  REQUIRE(!write_annotated_trace(gz, findings, dir.file("packed.json.gz")));
  CHECK(read_gzip(dir.file("packed.json.gz")) == plain);
  CHECK(plain.find(events) != std::string::npos);

  std::string bare = dir.write("bare.json", "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}]");
  REQUIRE(!write_annotated_trace(bare, findings, dir.file("bare-out.json")));
  CHECK(testing::read_file(dir.file("bare-out.json")) ==
        "[\n" + events + ",{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}]");

  std::string empty = dir.write("empty.json", "{\"traceEvents\": [ ]}");
  REQUIRE(!write_annotated_trace(empty, findings, dir.file("empty-out.json")));
  CHECK(testing::read_file(dir.file("empty-out.json")) == "{\"traceEvents\": [\n" + events + " ]}");
}

TEST_CASE("annotating fails clearly on files that are not traces") {
  testing::TempDir dir;
  auto findings = ranked_findings();
  std::string not_trace = dir.write("x.json", "{\"other\": 1}");
  auto error = write_annotated_trace(not_trace, findings, dir.file("o.json"));
  REQUIRE(error);
  CHECK(error->message == not_trace + ": no traceEvents array found; nothing to annotate");
  CHECK(!std::filesystem::exists(dir.file("o.json")));
  CHECK(!std::filesystem::exists(dir.file("o.json.tmp")));
  auto missing = write_annotated_trace(dir.file("missing.json"), findings, dir.file("o.json"));
  REQUIRE(missing);
  CHECK(missing->message == dir.file("missing.json") + ": cannot open the trace to annotate");
}
