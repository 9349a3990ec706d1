// The link pass: per-track ordering, CPU nesting (parent) and GPU op <-> launch call (launch).
#include "links.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "parallel.h"

namespace ptadvise::detail {
namespace {

// Timestamps rounded separately (integer µs, or floats printed with 3 decimals) can make a child end up
// to a microsecond after its parent; such a child is still nested, and its end is clamped to the parent's.
constexpr int64_t kNestingToleranceNs = 1000;

// Which of two events with the same start and length encloses the other: the lower rank.
int nesting_rank(EventKind kind) {
  switch (kind) {
    case EventKind::UserAnnotation:
    case EventKind::GpuAnnotation:
      return 0;
    case EventKind::PythonFunction:
      return 1;
    case EventKind::CpuOp:
    case EventKind::Collective:
      return 2;
    case EventKind::Runtime:
    case EventKind::Driver:
      return 3;
    default:
      return 4;
  }
}

// Track ids in a canonical order (CPU threads, then GPU streams; by pid, then tid: numbers in order,
// then names), not in the order of the file's first event on each: the same trace written in another
// event order gets the same ids, so every tie broken by track id (the thread that carries the steps,
// the busiest launching thread) falls the same way.
void order_tracks(Timeline& timeline) {
  std::vector<Track>& tracks = timeline.tracks;
  const auto count = static_cast<uint32_t>(tracks.size());
  std::vector<uint32_t> order(count);
  for (uint32_t t = 0; t < count; ++t) order[t] = t;
  auto id_before = [&timeline](int64_t number_a, StringId text_a, int64_t number_b, StringId text_b) -> int {
    if ((number_a >= 0) != (number_b >= 0)) return number_a >= 0 ? -1 : 1;
    if (number_a >= 0) return number_a < number_b ? -1 : (number_a > number_b ? 1 : 0);
    const int text = timeline.strings.view(text_a).compare(timeline.strings.view(text_b));
    return text < 0 ? -1 : (text > 0 ? 1 : 0);
  };
  auto before = [&](uint32_t a, uint32_t b) {
    const Track& x = tracks[a];
    const Track& y = tracks[b];
    if (x.kind != y.kind) return x.kind == TrackKind::Cpu;
    if (const int pid = id_before(x.pid, x.pid_text, y.pid, y.pid_text); pid != 0) return pid < 0;
    if (const int tid = id_before(x.tid, x.tid_text, y.tid, y.tid_text); tid != 0) return tid < 0;
    return a < b;
  };
  if (std::is_sorted(order.begin(), order.end(), before)) return;
  std::sort(order.begin(), order.end(), before);
  std::vector<uint32_t> new_id(count);
  std::vector<Track> sorted;
  sorted.reserve(count);
  for (uint32_t t = 0; t < count; ++t) {
    new_id[order[t]] = t;
    sorted.push_back(tracks[order[t]]);
  }
  tracks = std::move(sorted);
  for (uint32_t& track : timeline.events.track) {
    if (track < count) track = new_id[track];
  }
}

// Each track's events in (ts asc, dur desc, index) order. GPU streams come in that order already and are
// only checked; CPU threads do not (Kineto writes an op after the ops inside it).
void list_track_events(Timeline& timeline) {
  const Events& events = timeline.events;
  const size_t tracks = timeline.tracks.size();
  std::vector<size_t> counts(tracks, 0);
  for (uint32_t track : events.track) {
    if (track < tracks) ++counts[track];  // defensive: loader always fills valid tracks
  }
  timeline.track_events.assign(tracks, {});
  for (size_t t = 0; t < tracks; ++t) timeline.track_events[t].reserve(counts[t]);
  for (EventIndex i = 0; i < events.size(); ++i) {
    const uint32_t track = events.track[i];
    if (track < tracks) timeline.track_events[track].push_back(i);
  }
}

// Ties (same start and length: common with integer-µs timestamps) are broken by what the events are,
// not by where the file wrote them: an annotation encloses the ops it spans, a Python frame the op it
// calls, an op the runtime calls it makes; two ops by their External id (given out as ops start, so the
// enclosing op has the smaller one).
bool tie_before(const Events& events, EventIndex a, EventIndex b) {
  const int rank_a = nesting_rank(events.kind[a]), rank_b = nesting_rank(events.kind[b]);
  if (rank_a != rank_b) return rank_a < rank_b;
  const int64_t id_a = events.external_id[a], id_b = events.external_id[b];
  if (id_a >= 0 && id_b >= 0 && id_a != id_b) return id_a < id_b;
  return a < b;
}

void sort_track(const Events& events, std::vector<EventIndex>& list) {
  auto before = [&events](EventIndex a, EventIndex b) {
    if (events.ts_ns[a] != events.ts_ns[b]) return events.ts_ns[a] < events.ts_ns[b];
    if (events.dur_ns[a] != events.dur_ns[b]) return events.dur_ns[a] > events.dur_ns[b];
    return tie_before(events, a, b);
  };
  if (std::is_sorted(list.begin(), list.end(), before)) return;
  // Sorted as keys side by side, not as indices into the columns: a comparison then reads one cache line
  // instead of two random ones (the per-track sort was two thirds of the link pass).
  struct Key {
    int64_t ts, dur;
    EventIndex event;
  };
  auto key_before = [&events](const Key& a, const Key& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.dur != b.dur) return a.dur > b.dur;
    return tie_before(events, a.event, b.event);
  };
  std::vector<Key> keys(list.size());
  for (size_t k = 0; k < list.size(); ++k) keys[k] = {events.ts_ns[list[k]], events.dur_ns[list[k]], list[k]};
  // Most tracks are written in a few runs already in order (a track written in two parts, a handful of
  // latecomers): those are merged, in linear time per level. Many short runs (Kineto until 2022 wrote an
  // op after the ops inside it) are sorted whole.
  const size_t most_runs = 16 + keys.size() / 64;
  std::vector<size_t> bounds{0};
  for (size_t k = 1; k < keys.size() && bounds.size() <= most_runs; ++k) {
    if (key_before(keys[k], keys[k - 1])) bounds.push_back(k);
  }
  bounds.push_back(keys.size());
  if (bounds.size() - 1 > most_runs) {
    std::sort(keys.begin(), keys.end(), key_before);
  } else {
    while (bounds.size() > 2) {  // neighbouring runs merged pairwise until one is left
      std::vector<size_t> merged{0};
      for (size_t r = 0; r + 2 < bounds.size(); r += 2) {
        std::inplace_merge(keys.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                           keys.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                           keys.begin() + static_cast<std::ptrdiff_t>(bounds[r + 2]), key_before);
        merged.push_back(bounds[r + 2]);
      }
      if (merged.back() != bounds.back()) merged.push_back(bounds.back());  // an odd run out waits a level
      bounds = std::move(merged);
    }
  }
  for (size_t k = 0; k < list.size(); ++k) list[k] = keys[k].event;
}

// Stack walk over one CPU track in (ts asc, dur desc) order: an event's parent is the innermost open
// event that still encloses it.
void link_parents(Timeline& timeline, const std::vector<EventIndex>& ordered) {
  Events& events = timeline.events;
  std::vector<EventIndex> open;
  for (EventIndex i : ordered) {
    const int64_t start = events.ts_ns[i];
    const int64_t end = events.end_ns(i);
    while (!open.empty()) {
      EventIndex top = open.back();
      const int64_t top_end = events.end_ns(top);
      if (start < top_end && end <= top_end + kNestingToleranceNs) break;
      open.pop_back();
    }
    if (!open.empty()) {
      EventIndex parent = open.back();
      events.parent[i] = parent;
      const int64_t parent_end = events.end_ns(parent);
      if (end > parent_end) events.dur_ns[i] = parent_end - start;  // the rounding overhang
    }
    if (events.dur_ns[i] > 0) open.push_back(i);
  }
}

bool is_launch_side(EventKind kind) { return kind == EventKind::Runtime || kind == EventKind::Driver; }

// GPU-side events that a runtime/driver call can have issued (annotations carry no correlation of their own).
bool is_launched(EventKind kind) { return is_gpu_activity(kind) || kind == EventKind::Sync; }

// Correlation id -> launch call: open addressing with linear probing in one flat array. A node-based
// std::unordered_map cost 9% of a check (one allocation per call, a pointer chase per lookup, and out of
// cache beyond a few hundred MB of trace).
class CallsByCorrelation {
 public:
  explicit CallsByCorrelation(size_t calls) {
    size_t capacity = 16;
    unsigned bits = 4;
    while (capacity < calls * 2) {
      capacity *= 2;
      ++bits;
    }
    slots_.assign(capacity, {kEmpty, kNone});
    mask_ = capacity - 1;
    shift_ = 64 - bits;
  }
  // Keeps the first call of a correlation id (duplicates are rare); false for a duplicate.
  bool insert(int64_t correlation, EventIndex call) {
    for (size_t at = slot(correlation);; at = (at + 1) & mask_) {
      if (slots_[at].first == kEmpty) {
        slots_[at] = {correlation, call};
        return true;
      }
      if (slots_[at].first == correlation) return false;
    }
  }
  EventIndex find(int64_t correlation) const {
    for (size_t at = slot(correlation);; at = (at + 1) & mask_) {
      if (slots_[at].first == correlation) return slots_[at].second;
      if (slots_[at].first == kEmpty) return kNone;
    }
  }

 private:
  static constexpr int64_t kEmpty = -1;  // correlation ids are >= 0
  size_t slot(int64_t correlation) const {
    return static_cast<size_t>((static_cast<uint64_t>(correlation) * 0x9E3779B97F4A7C15ULL) >> shift_);  // Fibonacci hashing
  }
  std::vector<std::pair<int64_t, EventIndex>> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 60;
};

void link_launches(Timeline& timeline) {
  Events& events = timeline.events;
  size_t calls = 0;
  for (EventIndex i = 0; i < events.size(); ++i) {
    calls += is_launch_side(events.kind[i]) && events.correlation[i] >= 0 ? 1 : 0;
  }
  // ROCm traces of the roctracer era carry no "correlation": a call and the GPU op it issued share an
  // "External id" (their ac2g flow has the same id). Only when no call has a correlation, so a trace
  // that has them is never linked another way, and only when no two calls share an External id (where
  // they do, it is the id of the CPU op around them, which does not tell its calls' GPU ops apart).
  const std::vector<int64_t>* key = &events.correlation;
  const bool by_external_id = calls == 0;
  if (by_external_id) {
    for (EventIndex i = 0; i < events.size(); ++i) {
      calls += is_launch_side(events.kind[i]) && events.external_id[i] >= 0 ? 1 : 0;
    }
    key = &events.external_id;
  }
  if (calls == 0) return;
  const std::vector<int64_t>& id = *key;
  CallsByCorrelation call_by_correlation(calls);
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (!is_launch_side(events.kind[i]) || id[i] < 0) continue;
    if (!call_by_correlation.insert(id[i], i) && by_external_id) return;
  }
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (!is_launched(events.kind[i]) || id[i] < 0) continue;
    const EventIndex call = call_by_correlation.find(id[i]);
    if (call == kNone) continue;
    events.launch[i] = call;
    // The call points at its first GPU op; GPU work is preferred over a sync record of the same call.
    EventIndex current = events.launch[call];
    if (current == kNone) {
      events.launch[call] = i;
      continue;
    }
    const bool current_is_work = is_gpu_activity(events.kind[current]);
    const bool candidate_is_work = is_gpu_activity(events.kind[i]);
    if ((candidate_is_work && !current_is_work) ||
        (candidate_is_work == current_is_work && events.ts_ns[i] < events.ts_ns[current])) {
      events.launch[call] = i;
    }
  }
}

}  // namespace

void link_timeline(Timeline& timeline, unsigned threads) {
  Events& events = timeline.events;
  events.parent.assign(events.size(), kNone);
  events.launch.assign(events.size(), kNone);
  order_tracks(timeline);
  list_track_events(timeline);
  // Each track is sorted and nested on its own (an event's parent and clamped length are its track's),
  // and the launches only read starts, kinds and correlations: the launches and the tracks, largest
  // first, are shared out between the threads.
  std::vector<uint32_t> by_size(timeline.tracks.size());
  for (uint32_t t = 0; t < by_size.size(); ++t) by_size[t] = t;
  std::stable_sort(by_size.begin(), by_size.end(), [&timeline](uint32_t a, uint32_t b) {
    return timeline.track_events[a].size() > timeline.track_events[b].size();
  });
  // Item 0 links the launches, item k > 0 the k-th largest track.
  std::atomic<size_t> next_item{0};
  auto link_items = [&] {
    for (size_t k = next_item++; k <= by_size.size(); k = next_item++) {
      if (k == 0) {
        link_launches(timeline);
        continue;
      }
      const uint32_t t = by_size[k - 1];
      sort_track(events, timeline.track_events[t]);
      if (timeline.tracks[t].kind == TrackKind::Cpu) link_parents(timeline, timeline.track_events[t]);
    }
  };
  run_on_threads(std::min<size_t>(std::max(threads, 1u), by_size.size() + 1), link_items);
}

}  // namespace ptadvise::detail
