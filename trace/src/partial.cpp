#include <algorithm>
#include <cstdio>

#include "ptadvise/loader.h"

namespace ptadvise {

std::optional<std::string> partial_trace_problem(const Timeline& timeline, double max_lost_share) {
  const LoadStats& stats = timeline.stats;
  // Bytes a damaged .json.gz never inflated count as lost, of a trace that would have been that much larger.
  const uint64_t lost = stats.lost_bytes + stats.unread_bytes;
  const uint64_t whole = stats.bytes + stats.unread_bytes;
  const double byte_share = whole == 0 ? 0.0 : static_cast<double>(lost) / static_cast<double>(whole);
  const double event_share = stats.events_seen == 0 ? 0.0
                                                     : static_cast<double>(stats.malformed_events) /
                                                           static_cast<double>(stats.events_seen);
  // Begin/end events are not read (docs/TRACE_LOADING.md, "Events"): a trace made of them is mostly lost.
  // So are events of a category no profiler writes (kept as "other", which no figure counts).
  auto share_of_events = [&stats](uint64_t count) {
    return stats.events_seen == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(stats.events_seen);
  };
  const double begin_end_share = share_of_events(stats.begin_end_events);
  const double unknown_share = share_of_events(stats.unknown_category_events);
  if (std::max({byte_share, event_share, begin_end_share, unknown_share}) <= max_lost_share) return std::nullopt;
  char text[256];
  if (unknown_share > std::max({byte_share, event_share, begin_end_share})) {
    std::snprintf(text, sizeof text, "%.1f%% of the events (%llu of %llu) have a category ptadvise does not read",
                  unknown_share * 100, static_cast<unsigned long long>(stats.unknown_category_events),
                  static_cast<unsigned long long>(stats.events_seen));
  } else if (begin_end_share > std::max(byte_share, event_share)) {
    std::snprintf(text, sizeof text, "%.1f%% of the events (%llu of %llu) are begin/end (\"B\"/\"E\") events, which are not read",
                  begin_end_share * 100, static_cast<unsigned long long>(stats.begin_end_events),
                  static_cast<unsigned long long>(stats.events_seen));
  } else if (byte_share >= event_share) {
    std::snprintf(text, sizeof text, "%.1f%% of the trace (%s%llu of %llu bytes) could not be read", byte_share * 100,
                  stats.unread_bytes > 0 ? "about " : "", static_cast<unsigned long long>(lost),
                  static_cast<unsigned long long>(whole));
  } else {
    std::snprintf(text, sizeof text, "%.1f%% of the events (%llu of %llu) are malformed and were skipped",
                  event_share * 100, static_cast<unsigned long long>(stats.malformed_events),
                  static_cast<unsigned long long>(stats.events_seen));
  }
  return timeline.path + ": " + text +
         "; results on the rest would not describe the run (pass --accept-partial to analyse it anyway)";
}

}  // namespace ptadvise
