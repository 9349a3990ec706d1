// The 90 MB trace of the loader's incremental-read tests (plain and .json.gz), and what must hold when it
// is loaded with kept args keys against the same text loaded whole.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <string>

#include "ptadvise/timeline.h"

namespace ptadvise::testing {

struct BigTrace {
  std::string text;
  size_t broken_at = 0;  // byte where the one broken event (an unescaped quote in its name) starts
};

// 90 MB of kernels (args `bytes`, `grid` and padding), one broken event past 70 MiB (which makes the loader
// read the rest at once), and top-level keys after the events (rank 3, baseTimeNanoseconds).
inline BigTrace big_trace() {
  BigTrace trace;
  std::string& bytes = trace.text;
  bytes = "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU\"}],\n\"traceEvents\": [\n";
  for (size_t i = 0; bytes.size() < (size_t{90} << 20); ++i) {
    const bool broken = bytes.size() > (size_t{70} << 20) && trace.broken_at == 0;
    if (broken) trace.broken_at = bytes.size();
    bytes += std::string(i == 0 ? "" : ",\n") + "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" +
             (broken ? "k\"bad" : "gemm_" + std::to_string(i % 5)) + "\", \"pid\": 0, \"tid\": 7, \"ts\": " +
             std::to_string(1000 + i * 10) + ", \"dur\": 5, \"args\": {\"bytes\": " + std::to_string(i) +
             ", \"grid\": [" + std::to_string(i % 7) + ", 1, 1], \"padding\": \"" + std::string(200, 'x') + "\"}}";
  }
  bytes += "\n], \"baseTimeNanoseconds\": 5000, \"distributedInfo\": {\"rank\": 3}}\n";
  return trace;
}

// `kept` (loaded keeping the args key `bytes`, read as the parse went on) against `all` (the same text read
// whole, every key kept): the same events, times, names, tracks, warnings and `bytes` args, and a buffer
// that holds the kept args only.
inline void check_same_big_trace(const Timeline& kept, const Timeline& all, size_t text_bytes) {
  CHECK(kept.stats.bytes == text_bytes);
  CHECK(kept.stats.recovered_errors == 1);
  CHECK(kept.stats.lost_bytes == all.stats.lost_bytes);
  CHECK(kept.stats.warnings == all.stats.warnings);
  CHECK(kept.rank == 3);
  CHECK(kept.origin_ns == all.origin_ns);
  CHECK(kept.devices.size() == 1);
  REQUIRE(kept.events.size() == all.events.size());
  CHECK(kept.events.size() == 265712);  // every entry but the broken one
  CHECK(kept.events.ts_ns == all.events.ts_ns);
  CHECK(kept.events.name == all.events.name);
  CHECK(kept.events.track == all.events.track);
  bool same_args = true;
  for (EventIndex e = 0; e < kept.events.size(); ++e) {
    same_args = same_args && kept.arg_int(e, "bytes") == all.arg_int(e, "bytes");
  }
  CHECK(same_args);
  CHECK(kept.buffer_size < text_bytes / 10);  // the kept args, not the text
}

}  // namespace ptadvise::testing
