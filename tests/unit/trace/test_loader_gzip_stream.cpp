// .json.gz inflated as the parse goes on (LoadOptions::arg_keys given): past the first read (kFirstRead,
// 16 MiB) inflated, the text comes from the gzip stream 4 MiB (kPendingRead) at a time. The timeline is
// the one of the text read whole, across gzip members; a cut stream keeps the events before the cut, a damaged one counts the rest as
// unread; the inflated-size cap still holds.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "big_trace.h"
#include "gzip_bytes.h"
#include "scoped_env.h"
#include "input.h"
#include "numbers.h"
#include "ptadvise/loader.h"

using ptadvise::ArgKeySet;
using ptadvise::LoadError;
using ptadvise::LoadOptions;
using ptadvise::Timeline;

using ptadvise::testing::ScopedEnv;

namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& bytes) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

LoadOptions keeping_bytes() {
  LoadOptions keep;
  keep.arg_keys = std::make_shared<const ArgKeySet>(ArgKeySet{"bytes"});
  return keep;
}

// A kernel event whose args hold `bytes` (64) and `padding` characters of padding.
std::string gemm_event(size_t padding) {
  return "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 1000, "
         "\"dur\": 5, \"args\": {\"bytes\": 64, \"padding\": \"" + std::string(padding, 'x') + "\"}}";
}

// Events of `event` until the text is `size` bytes; returns the text and sets `events`.
std::string repeated_events(const std::string& event, size_t size, size_t& events) {
  std::string bytes = "{\"traceEvents\": [\n";
  events = 0;
  while (bytes.size() < size) bytes += (events++ == 0 ? "" : ",\n") + event;
  bytes += "\n]}\n";
  return bytes;
}

// The peak resident set of this process, in KiB (VmHWM).
unsigned long long peak_resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// Runs `work` in a child whose peak resident set is reset first, and returns what the peak grew by in KiB:
// what `work` held at most. nullopt when this kernel cannot reset the peak. `work` returns false on failure.
template <typename Work>
std::optional<unsigned long long> peak_growth_kib(Work work) {
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_ends[0]);
    unsigned long long grown = 0;
    int code = 0;
    if (!(std::ofstream("/proc/self/clear_refs") << "5")) {
      code = 3;  // no peak reset here: nothing to measure
    } else {
      const unsigned long long before = peak_resident_kib();
      if (!work()) code = 4;
      grown = peak_resident_kib() - before;
    }
    if (write(pipe_ends[1], &grown, sizeof grown) != sizeof grown) code = 5;
    _exit(code);
  }
  close(pipe_ends[1]);
  unsigned long long grown = 0;
  const bool got = read(pipe_ends[0], &grown, sizeof grown) == sizeof grown;
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) return std::nullopt;
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(got);
  return grown;
}

}  // namespace

TEST_CASE("gzip stream: a 90 MB .json.gz of two members inflated as the parse goes on gives the timeline of the text") {
  // A broken event past 70 MiB makes the loader inflate the rest at once; the top-level keys after the
  // events are read after them; the second gzip member starts at 30 MiB of text.
  const ptadvise::testing::BigTrace trace = ptadvise::testing::big_trace();
  const std::string& bytes = trace.text;
  const size_t split = size_t{30} << 20;
  const std::string compressed =
      ptadvise::testing::gzip_bytes(bytes.substr(0, split)) + ptadvise::testing::gzip_bytes(bytes.substr(split));
  const std::filesystem::path path = write_temp("ptadvise_gzip_stream_big.json.gz", compressed);

  auto input = ptadvise::detail::read_input_file(path.string(), true);
  REQUIRE(input.ok());
  REQUIRE(input.pending != nullptr);  // the first read inflated, the rest to come
  CHECK(input.pending->filled() == ptadvise::detail::kFirstRead);
  CHECK(input.buffer.size > bytes.size());  // the cap: the inflated size is not known yet
  input = {};

  auto streamed = ptadvise::load_trace_file(path.string(), keeping_bytes());
  auto whole = ptadvise::load_trace_bytes(bytes, path.string());
  std::filesystem::remove(path);
  REQUIRE(std::holds_alternative<Timeline>(streamed));
  REQUIRE(std::holds_alternative<Timeline>(whole));
  const Timeline& kept = std::get<Timeline>(streamed);
  CHECK(trace.broken_at > (size_t{70} << 20));
  CHECK(kept.stats.unread_bytes == 0);
  ptadvise::testing::check_same_big_trace(kept, std::get<Timeline>(whole), bytes.size());
}

TEST_CASE("gzip stream: a .json.gz cut past its first read keeps the events before the cut, with the warning") {
  const std::string event = gemm_event(900);
  size_t events = 0;
  const std::string bytes = repeated_events(event, size_t{80} << 20, events);
  const std::string compressed = ptadvise::testing::gzip_bytes(bytes);
  const size_t cut = compressed.size() * 9 / 10;  // about 72 MiB of text inflate before it
  const std::filesystem::path path = write_temp("ptadvise_gzip_stream_cut.json.gz", compressed.substr(0, cut));
  auto result = ptadvise::load_trace_file(path.string(), keeping_bytes());
  std::filesystem::remove(path);
  REQUIRE(std::holds_alternative<Timeline>(result));
  const Timeline& timeline = std::get<Timeline>(result);
  const size_t inflated = timeline.stats.bytes;
  CHECK(inflated > (size_t{70} << 20));
  CHECK(inflated < (size_t{74} << 20));
  CHECK(bytes.compare(0, inflated, bytes.data(), inflated) == 0);
  size_t whole = 0;  // the events that end before the cut
  for (size_t end = 18 + event.size(); end <= inflated; end += event.size() + 2) ++whole;
  CHECK(timeline.events.size() == whole);
  CHECK(timeline.events.size() < events);
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0] == path.string() + ": the gzip data is cut short or damaged after compressed byte " +
                                          std::to_string(cut) + " of " + std::to_string(cut) + "; using the " +
                                          ptadvise::detail::with_commas(inflated) + " bytes that inflate");
  CHECK(timeline.stats.warnings[1].find(path.string() + ": file ends inside an event at byte ") == 0);
  CHECK(timeline.stats.unread_bytes == 0);
  CHECK(timeline.arg_int(whole - 1, "bytes") == 64);
}

TEST_CASE("gzip stream: a .json.gz inflating beyond the memory budget past its first read is refused") {
  const std::string event = gemm_event(900);
  size_t events = 0;
  const std::string bytes = repeated_events(event, size_t{90} << 20, events);
  const std::filesystem::path path = write_temp("ptadvise_gzip_stream_budget.json.gz", ptadvise::testing::gzip_bytes(bytes));
  {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "100MiB");  // a budget of 80 MiB of text
    auto refused = ptadvise::load_trace_file(path.string(), keeping_bytes());
    REQUIRE(std::holds_alternative<LoadError>(refused));
    CHECK(std::get<LoadError>(refused).message ==
          path.string() + ": gzip data inflates beyond 80 MiB, more than this process can hold in memory "
                          "(set PTADVISE_MEMORY_LIMIT to change the limit)");
  }
  {
    ScopedEnv limit("PTADVISE_MEMORY_LIMIT", "200MiB");
    auto loaded = ptadvise::load_trace_file(path.string(), keeping_bytes());
    REQUIRE(std::holds_alternative<Timeline>(loaded));
    CHECK(std::get<Timeline>(loaded).events.size() == events);
  }
  std::filesystem::remove(path);
}

TEST_CASE("gzip stream: a .json.gz damaged past its first read keeps what inflates and counts the rest as unread") {
  const std::string event = gemm_event(900);
  size_t events = 0;
  const std::string bytes = repeated_events(event, size_t{80} << 20, events);
  const size_t split = size_t{70} << 20;
  const std::string first = ptadvise::testing::gzip_bytes(bytes.substr(0, split));
  std::string second = ptadvise::testing::gzip_bytes(bytes.substr(split));
  second[10] = 0x06;  // the second member's first deflate block gets the reserved block type
  const std::filesystem::path path = write_temp("ptadvise_gzip_stream_damaged.json.gz", first + second);
  auto result = ptadvise::load_trace_file(path.string(), keeping_bytes());
  std::filesystem::remove(path);
  REQUIRE(std::holds_alternative<Timeline>(result));
  const Timeline& timeline = std::get<Timeline>(result);
  CHECK(timeline.stats.bytes == split);
  size_t whole = 0;  // the events that end before the damage
  for (size_t end = 18 + event.size(); end <= split; end += event.size() + 2) ++whole;
  CHECK(timeline.events.size() == whole);
  REQUIRE(timeline.stats.warnings.size() == 2);
  CHECK(timeline.stats.warnings[0].find(path.string() + ": the gzip data is damaged at compressed byte " +
                                        std::to_string(first.size() + 11) + " of " +
                                        std::to_string(first.size() + second.size()) + "; using the " +
                                        ptadvise::detail::with_commas(split) + " bytes that inflate before it") == 0);
  CHECK(timeline.stats.unread_bytes > 0);
  CHECK(timeline.stats.unread_bytes < bytes.size());
}

TEST_CASE("gzip stream: a small .json.gz faults in the memory its text needs, not the 16 MiB of a first read") {
  // 2 MiB of events whose numbers vary, so that the gzip (about 0.4 MB) may inflate to more than 16 MiB as
  // far as its size tells (the inflated-size cap is 1032 times the compressed size).
  std::string text = "{\"traceEvents\": [\n";
  uint64_t state = 12345;
  for (size_t event = 0; text.size() < (size_t{2} << 20); ++event) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    text += (event == 0 ? "" : ",\n") + std::string("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", ") +
            "\"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(state >> 24) + ", \"dur\": 2, \"args\": {\"bytes\": " +
            std::to_string(state % 1000003) + "}}";
  }
  text += "\n]}\n";
  const std::string compressed = ptadvise::testing::gzip_bytes(text);
  REQUIRE(compressed.size() * 1032 > ptadvise::detail::kFirstRead);
  const std::filesystem::path path = write_temp("ptadvise_gzip_small.json.gz", compressed);
  const auto grown_kib = peak_growth_kib([&] {
    auto input = ptadvise::detail::read_input_file(path.string(), true);
    return input.ok() && input.pending == nullptr && input.buffer.size == text.size();
  });
  std::filesystem::remove(path);
  if (!grown_kib) {
    MESSAGE("skipped: this kernel cannot reset the peak resident set (/proc/self/clear_refs)");
    return;
  }
  MESSAGE("peak grew by " << *grown_kib / 1024 << " MiB");
  // 2 MiB of text, in one 4 MiB stretch populated (about 10 MiB under AddressSanitizer); all of the first
  // read populated at once is 16 MiB and more.
  CHECK(*grown_kib < 14 * 1024);
}

TEST_CASE("gzip stream: a 100 MiB trace, .json or .json.gz, holds a bounded part of its text while it loads") {
  // With kept keys the text is needed only until its window is parsed: what is resident at once is the
  // first read, then the read-ahead and the stretch not yet given back (input.h), about 24 MiB, plus the
  // event columns and the parsers. A first read or a fill of 64 MiB (the loader's start once asked for
  // that much) holds two thirds of this file.
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("skipped under AddressSanitizer: its shadow memory and quarantine are resident too");
  return;
#endif
  const std::string event = gemm_event(2000);
  size_t events = 0;
  const std::string bytes = repeated_events(event, size_t{100} << 20, events);
  const std::filesystem::path plain = write_temp("ptadvise_bounded_load.json", bytes);
  const std::filesystem::path gzip = write_temp("ptadvise_bounded_load.json.gz", ptadvise::testing::gzip_bytes(bytes));
  for (const auto& path : {plain, gzip}) {
    CAPTURE(path);
    const auto grown_kib = peak_growth_kib([&] {
      LoadOptions options = keeping_bytes();
      options.threads = 2;
      auto loaded = ptadvise::load_trace_file(path.string(), options);
      return std::holds_alternative<Timeline>(loaded) && std::get<Timeline>(loaded).events.size() == events;
    });
    if (!grown_kib) {
      MESSAGE("skipped: this kernel cannot reset the peak resident set (/proc/self/clear_refs)");
      break;
    }
    MESSAGE("peak grew by " << *grown_kib / 1024 << " MiB");
    CHECK(*grown_kib < 56 * 1024);
  }
  std::filesystem::remove(plain);
  std::filesystem::remove(gzip);
}
