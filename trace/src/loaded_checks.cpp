// Checks of the events once they are all read: events far from the rest of the trace's times and the sum
// of the durations (numbers.h), events of categories no profiler writes (docs/TRACE_LOADING.md).
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "numbers.h"
#include "trace_parser.h"

namespace ptadvise::detail {

std::optional<std::string> TraceParser::bound_times() {
  Events& events = timeline_.events;
  const size_t count = events.size();
  if (count == 0) return std::nullopt;
  // The median start of up to 65,536 evenly spread events: a stray clock cannot move it.
  std::vector<int64_t> sample;
  const size_t stride = std::max<size_t>(1, count / 65536);
  sample.reserve(count / stride + 1);
  for (size_t e = 0; e < count; e += stride) sample.push_back(events.ts_ns[e]);
  auto middle = sample.begin() + static_cast<std::ptrdiff_t>(sample.size() / 2);
  std::nth_element(sample.begin(), middle, sample.end());
  const int64_t low = *middle - kMaxDistanceNs, high = *middle + kMaxDistanceNs;
  auto near = [&](size_t e) { return events.ts_ns[e] >= low && events.end_ns(e) <= high; };
  size_t kept = 0;
  // The kept events' durations, summed in the same pass. Each is below 2^47 ns (it lies within 2^46 ns
  // of the median on both ends), so the sum stops short of any overflow once it passes the bound.
  int64_t total = 0;
  std::string first_far;
  for (size_t e = 0; e < count; ++e) {
    if (!near(e)) {
      if (first_far.empty()) {
        char at[80];
        std::snprintf(at, sizeof at, " at ts %.3f us", static_cast<double>(events.ts_ns[e]) / 1e3);
        first_far = "\"" + shorten(timeline_.strings.view(events.name[e]), 80) + "\"" + at;
      }
      continue;
    }
    if (total <= kMaxTotalDurationNs) total += events.dur_ns[e];
    if (kept != e) for_each_parsed_column(events, [kept, e](auto& column) { column[kept] = column[e]; });
    ++kept;
  }
  if (kept < count) {
    timeline_.stats.malformed_events += count - kept;
    if (first_malformed_.empty()) {
      first_malformed_ = first_far + ", more than " + std::to_string(kMaxDistanceNs / 3'600'000'000'000) +
                         " hours from the median time of the trace's events";
    }
    for_each_parsed_column(events, [kept](auto& column) { column.resize(kept); });
  }
  if (total > kMaxTotalDurationNs) {
    double all = 0;  // the whole sum, for the message (a double does not overflow)
    for (int64_t dur : events.dur_ns) all += static_cast<double>(dur);
    const double days = all / 86'400e9;
    char text[200];
    std::snprintf(text, sizeof text,
                  "the events' durations add up to %.0f days (more than %.0f): not the trace of a run, not analysed",
                  days, static_cast<double>(kMaxTotalDurationNs) / 86'400e9);
    return label_ + ": " + text;
  }
  return std::nullopt;
}

// Events of a category no version of the profiler writes are kept as EventKind::Other, which no figure
// counts: a writer that renamed "kernel" would otherwise show an idle GPU without a word. Categories the
// profiler writes for work ptadvise does not analyse are not named.
void TraceParser::warn_unknown_categories() {
  static const std::array<std::string_view, 7> kKnownOther = {
      "Trace", "overhead", "cuda_profiler_range", "glow_runtime", "external_correlation", "hpu_op", "cpu_instant_event"};
  // Counted as the events were parsed (ChunkParser::store), so no pass over the events here.
  std::vector<std::pair<uint64_t, std::string_view>> unknown;
  uint64_t total = 0;
  for (const auto& [category, count] : other_events_) {
    const std::string_view text = timeline_.strings.view(category);
    if (std::find(kKnownOther.begin(), kKnownOther.end(), text) != kKnownOther.end() || text.starts_with("mtia_")) continue;
    unknown.emplace_back(count, text);
    total += count;
  }
  timeline_.stats.unknown_category_events = total;
  const uint64_t seen = timeline_.stats.events_seen;
  if (total * 100 < seen) return;  // under 1% of the entries: not worth a line
  std::sort(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string list;
  for (size_t k = 0; k < unknown.size() && k < 3; ++k) {
    list += std::string(k == 0 ? "" : ", ") + "\"" + shorten(unknown[k].second, 40) + "\" " +
            with_commas(unknown[k].first);
  }
  if (unknown.size() > 3) list += ", ...";
  warn(with_commas(total) + " of " + with_commas(seen) + " events have a category ptadvise does not read (" +
       list + "): no figure counts their time");
}

}  // namespace ptadvise::detail
