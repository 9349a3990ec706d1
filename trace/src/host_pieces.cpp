// What a host thread does while the GPU idles: the innermost event at each moment, the calls that block
// it, and the stretches in which it records CUDA graphs (host_pieces.h).
#include <algorithm>
#include <unordered_set>

#include "host_pieces.h"

namespace ptadvise::detail {

void sweep_thread(const Timeline& timeline, uint32_t track, int64_t from, int64_t to, std::vector<Piece>& pieces) {
  const Events& events = timeline.events;
  const std::vector<EventIndex>& list = timeline.track_events[track];
  size_t next = static_cast<size_t>(
      std::upper_bound(list.begin(), list.end(), from,
                       [&events](int64_t value, EventIndex e) { return value < events.ts_ns[e]; }) -
      list.begin());
  // The events open at `from` are the nesting of the innermost one, followed up through `parent` as they
  // end (never copied: a gap inside 200k nested ops would copy them all); `open` holds those that start
  // inside the range.
  EventIndex enclosing = kNone;
  if (next > 0) {
    enclosing = list[next - 1];
    while (enclosing != kNone && events.end_ns(enclosing) <= from) enclosing = events.parent[enclosing];
  }
  std::vector<EventIndex> open;
  auto running = [&]() { return open.empty() ? enclosing : open.back(); };
  int64_t now = from;
  auto emit = [&pieces](int64_t start, int64_t end, EventIndex innermost) {
    if (!pieces.empty() && pieces.back().innermost == innermost && pieces.back().end_ns == start) {
      pieces.back().end_ns = end;
    } else {
      pieces.push_back({start, end, innermost});
    }
  };
  while (now < to) {
    while (!open.empty() && events.end_ns(open.back()) <= now) open.pop_back();
    if (open.empty()) {
      while (enclosing != kNone && events.end_ns(enclosing) <= now) enclosing = events.parent[enclosing];
    }
    int64_t boundary = to;
    if (next < list.size()) boundary = std::min(boundary, events.ts_ns[list[next]]);
    if (running() != kNone) boundary = std::min(boundary, events.end_ns(running()));
    if (boundary > now) {
      emit(now, boundary, running());
      now = boundary;
    }
    while (next < list.size() && events.ts_ns[list[next]] <= now && now < to) {
      EventIndex e = list[next++];
      if (events.dur_ns[e] > 0 && events.end_ns(e) > now) open.push_back(e);
    }
  }
}

// cudaMemcpyAsync followed by a synchronize on the same thread (`.item()`, `.cpu()`) blocks like a
// synchronous copy; so does a call that a cuda_sync record shows waiting on the host.
std::unordered_set<EventIndex> blocking_calls(const Timeline& timeline, const NameClasses& names) {
  const Events& events = timeline.events;
  std::unordered_set<EventIndex> blocking;
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    if (timeline.tracks[t].kind != TrackKind::Cpu) continue;
    EventIndex pending_copy = kNone;
    for (EventIndex e : timeline.track_events[t]) {
      EventKind kind = events.kind[e];
      if (kind != EventKind::Runtime && kind != EventKind::Driver) continue;
      if (pending_copy != kNone && events.parent[e] == pending_copy) continue;  // its driver call
      if (pending_copy != kNone && names.has(timeline, e, kSyncCall)) blocking.insert(pending_copy);
      pending_copy = names.has(timeline, e, kAsyncMemcpy) ? e : kNone;
    }
  }
  for (EventIndex e = 0; e < events.size(); ++e) {
    if (events.kind[e] == EventKind::Sync && events.launch[e] != kNone && names.has(timeline, e, kHostSyncRecord)) {
      blocking.insert(events.launch[e]);
    }
  }
  return blocking;
}

std::vector<std::vector<Interval>> capture_stretches(const Timeline& timeline, const NameClasses& names,
                                                     const std::vector<uint8_t>& launching) {
  const Events& events = timeline.events;
  std::vector<std::vector<Interval>> capture(timeline.tracks.size());
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    if (timeline.tracks[t].kind != TrackKind::Cpu) continue;
    std::vector<Interval>& stretches = capture[t];
    int64_t open = -1;
    bool ran_since_last = true;  // work that runs was launched since the last capture ended
    for (EventIndex e : timeline.track_events[t]) {
      const EventKind kind = events.kind[e];
      if (kind != EventKind::Runtime && kind != EventKind::Driver) continue;
      const uint16_t classes = names.by_name[events.name[e]];
      if ((classes & kCaptureBegin) && open < 0) {
        open = events.ts_ns[e];
      } else if ((classes & kCaptureEnd) && open >= 0) {
        if (!ran_since_last && !stretches.empty()) {
          stretches.back().end_ns = events.end_ns(e);
        } else {
          stretches.push_back({open, events.end_ns(e)});
        }
        open = -1;
        ran_since_last = false;
      } else if (open < 0 && launching[e] && (classes & kLaunchCall)) {
        ran_since_last = true;  // a launch outside a capture whose GPU op ran
      }
    }
  }
  return capture;
}

}  // namespace ptadvise::detail
