// Iterations from what the profiler records anyway (data-loader fetches, optimizer steps, a user's
// record_function range) and the split of a ProfilerStep holding several iterations (each step's period
// and the warm-up steps: step_periods.cpp). See docs/ANALYSIS.md, "Steps".
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "analysis_detail.h"
#include "numbers.h"

namespace ptadvise::detail {
namespace {

constexpr uint16_t kAnchor = kIterationStart | kIterationEnd;
// A generic annotation range counts as the iteration when its occurrences cover this share of their extent.
constexpr double kRangeCoverage = 0.5;

// Occurrences of one name on one thread, in time order, none nested in another of the same kind of anchor.
// A numbered range (`record_function(f"step_{i}")`) is one name: `name` is its first, `numbered` set.
struct Occurrences {
  StringId name = 0;
  uint16_t classes = 0;
  std::vector<EventIndex> events;
  bool numbered = false;
};

// The part of a range's name before a trailing number ("step_" of "step_12"), when it has one and text
// before it; empty otherwise.
std::string_view numbered_prefix(std::string_view name) {
  size_t digits = 0;
  while (digits < name.size() && digits < 18 && name[name.size() - 1 - digits] >= '0' &&
         name[name.size() - 1 - digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits == name.size() || digits == 18) return {};
  return name.substr(0, name.size() - digits);
}

uint64_t trailing_number(std::string_view name) {
  uint64_t number = 0;
  for (char c : name.substr(numbered_prefix(name).size())) number = number * 10 + static_cast<uint64_t>(c - '0');
  return number;
}

// An anchor nested inside another anchor (Adam.step inside CombinedOptimizer.step) is part of that one.
bool nested_in_anchor(const Timeline& timeline, const NameClasses& names, EventIndex i) {
  for (EventIndex p = timeline.events.parent[i]; p != kNone; p = timeline.events.parent[p]) {
    if ((names.by_name[timeline.events.name[p]] & kAnchor) != 0) return true;
  }
  return false;
}

// Whether event `i` is a user's range: a `user_annotation`, or in a trace that writes ranges like ops (the
// legacy profiler: no category; Kineto's first versions: "Operator") an event whose name has no namespace:
// operators are `ns::name` (aten::, prim::, c10d::, a custom library's); a range, a TorchScript method
// call are not.
bool is_range(const Timeline& timeline, EventIndex i) {
  const Events& events = timeline.events;
  if (events.kind[i] == EventKind::UserAnnotation) return true;
  return events.kind[i] == EventKind::CpuOp && timeline.strings.view(events.category[i]) != "cpu_op" &&
         timeline.strings.view(events.name[i]).find("::") == std::string_view::npos;
}

// A user's range repeating at the top of the thread (or directly under a step marker).
bool is_top_level_range(const Timeline& timeline, const NameClasses& names, EventIndex i) {
  const Events& events = timeline.events;
  if (!is_range(timeline, i)) return false;
  if ((names.by_name[events.name[i]] & (kAnchor | kStepMarker | kDataLoader)) != 0) return false;
  EventIndex p = enclosing_op_or_annotation(events, i);
  return p == kNone || (names.by_name[events.name[p]] & kStepMarker) != 0;
}

// Anchors and top-level ranges of `track` whose start lies in [from, to), grouped by name. Ranges whose
// names differ only in a trailing number that grows with time (`step_0`, `step_1`, ...: a loop's counter
// in a `record_function` name) are one group, as ProfilerStep#N markers are.
std::vector<Occurrences> collect(const Timeline& timeline, const NameClasses& names, uint32_t track, int64_t from,
                                 int64_t to) {
  const Events& events = timeline.events;
  std::map<StringId, Occurrences> by_name;
  std::map<std::string_view, std::vector<StringId>> by_prefix;  // numbered names, in first-seen order
  for (EventIndex i : timeline.track_events[track]) {
    if (events.ts_ns[i] < from || events.ts_ns[i] >= to || !is_op_or_annotation(events.kind[i])) continue;
    uint16_t classes = names.by_name[events.name[i]];
    bool anchor = (classes & kAnchor) != 0 && !nested_in_anchor(timeline, names, i);
    if (!anchor && !is_top_level_range(timeline, names, i)) continue;
    Occurrences& o = by_name[events.name[i]];
    if (o.events.empty() && !anchor) {
      if (std::string_view prefix = numbered_prefix(timeline.strings.view(events.name[i])); !prefix.empty()) {
        by_prefix[prefix].push_back(events.name[i]);
      }
    }
    o.name = events.name[i];
    o.classes = classes;
    // The same range written twice at one start (cpu_op and user_annotation) is one occurrence.
    if (!o.events.empty() && events.ts_ns[o.events.back()] == events.ts_ns[i]) continue;
    o.events.push_back(i);
  }
  for (auto& [prefix, members] : by_prefix) {
    if (members.size() < 2) continue;
    // One group when each name occurs once and the numbers grow with time; else the names stay apart.
    std::vector<EventIndex> joined;
    for (StringId name : members) {
      const Occurrences& o = by_name[name];
      if (o.events.size() != 1) {
        joined.clear();
        break;
      }
      joined.push_back(o.events.front());
    }
    if (joined.size() != members.size()) continue;
    std::sort(joined.begin(), joined.end(), [&](EventIndex a, EventIndex b) { return events.ts_ns[a] < events.ts_ns[b]; });
    bool growing = true;
    for (size_t k = 1; k < joined.size() && growing; ++k) {
      growing = trailing_number(timeline.strings.view(events.name[joined[k]])) >
                trailing_number(timeline.strings.view(events.name[joined[k - 1]]));
    }
    if (!growing) continue;
    const StringId first = events.name[joined.front()];
    Occurrences group = by_name[first];
    group.events = std::move(joined);
    group.numbered = true;
    for (StringId name : members) by_name.erase(name);
    by_name[first] = std::move(group);
  }
  std::vector<Occurrences> out;
  for (auto& [name, o] : by_name) out.push_back(std::move(o));
  return out;
}

// The chosen way of cutting a stretch of one thread into iterations.
struct Cut {
  enum class How { None, AtStarts, AfterEnds, Ranges } how = How::None;
  const Occurrences* anchor = nullptr;
  const Occurrences* closing = nullptr;  // the optimizer step that confirms a start anchor or range, when any
  size_t closing_per_iteration = 0;      // how many of it each iteration holds (two optimizers: a GAN)
};

// The first of `items` (in start order, as collected from one thread) starting at or after `from`.
std::vector<EventIndex>::const_iterator first_from(const Events& events, const std::vector<EventIndex>& items,
                                                  int64_t from) {
  return std::partition_point(items.begin(), items.end(), [&](EventIndex e) { return events.ts_ns[e] < from; });
}

// How many of `items` start in [from, to): a binary search each way, not a scan per iteration.
size_t count_between(const Events& events, const std::vector<EventIndex>& items, int64_t from, int64_t to) {
  const auto first = first_from(events, items, from);
  const auto end = std::partition_point(first, items.end(), [&](EventIndex e) { return events.ts_ns[e] < to; });
  return static_cast<size_t>(end - first);
}

// Whether the occurrences of `o` are disjoint, and how much of their extent they cover.
bool disjoint_covering(const Events& events, const Occurrences& o, double coverage) {
  int64_t covered = 0, previous_end = std::numeric_limits<int64_t>::min();
  for (EventIndex e : o.events) {
    if (events.ts_ns[e] < previous_end) return false;
    previous_end = events.end_ns(e);
    covered += events.dur_ns[e];
  }
  const int64_t extent = events.end_ns(o.events.back()) - events.ts_ns[o.events.front()];
  return extent > 0 && static_cast<double>(covered) >= coverage * static_cast<double>(extent);
}

// Picks the anchor (docs/ANALYSIS.md, "Steps"): a data-loader fetch, then a user range holding optimizer
// steps, then zero_grad — each when every iteration it opens holds the same number (>= 1) of optimizer
// steps and none comes before it (or there is no optimizer step) — else the optimizer step, else a
// covering user range.
Cut choose_cut(const Timeline& timeline, const std::vector<Occurrences>& found) {
  const Events& events = timeline.events;
  const Occurrences* closing = nullptr;
  for (const Occurrences& o : found) {
    if ((o.classes & kIterationEnd) != 0 && (!closing || o.events.size() > closing->events.size())) closing = &o;
  }
  // How many optimizer steps each stretch [starts[k], ends(k)) holds when all hold the same number n >= 1
  // and none lies before the first, else 0. Without an optimizer step, 1: nothing to contradict.
  auto steps_each = [&](const std::vector<EventIndex>& starts, auto&& end_of) -> size_t {
    if (!closing) return 1;
    // An optimizer step before the first start: the loop ends with this anchor (`opt.step();
    // opt.zero_grad()`), which then closes iterations rather than opening them.
    if (events.ts_ns[closing->events.front()] < events.ts_ns[starts.front()]) return 0;
    size_t per = 0;
    for (size_t k = 0; k < starts.size(); ++k) {
      const int64_t end = end_of(k);
      if (end == std::numeric_limits<int64_t>::min()) continue;  // the last start: open-ended
      const size_t held = count_between(events, closing->events, events.ts_ns[starts[k]], end);
      if (held == 0 || (per != 0 && held != per)) return 0;
      per = held;
    }
    return per;
  };
  auto next_start = [&](const std::vector<EventIndex>& starts) {
    return [&starts, &events](size_t k) {
      return k + 1 < starts.size() ? events.ts_ns[starts[k + 1]] : std::numeric_limits<int64_t>::min();
    };
  };
  auto start_anchor = [&](bool loader) -> Cut {
    for (const Occurrences& o : found) {
      if ((o.classes & kIterationStart) == 0 || o.events.size() < 2) continue;
      if (((o.classes & kDataLoader) != 0) != loader) continue;
      if (const size_t per = steps_each(o.events, next_start(o.events)); per > 0) {
        return {Cut::How::AtStarts, &o, closing, closing ? per : 0};
      }
    }
    return {};
  };
  // Data-loader fetches first: an iteration starts with its batch.
  if (Cut cut = start_anchor(true); cut.how != Cut::How::None) return cut;
  // A range of the user's around each iteration, holding its optimizer steps, says where iterations are
  // better than a zero_grad somewhere inside them.
  if (closing) {
    for (const Occurrences& o : found) {
      if ((o.classes & kAnchor) != 0 || o.events.size() < 2 || !disjoint_covering(events, o, 0.0)) continue;
      const size_t per = steps_each(o.events, [&](size_t k) { return events.end_ns(o.events[k]); });
      if (per > 0) return {Cut::How::Ranges, &o, closing, per};
    }
  }
  if (Cut cut = start_anchor(false); cut.how != Cut::How::None) return cut;
  if (closing && closing->events.size() >= 2) return {Cut::How::AfterEnds, closing, nullptr};
  const Occurrences* best = nullptr;
  for (const Occurrences& o : found) {
    if ((o.classes & kAnchor) != 0 || o.events.size() < 2 || !disjoint_covering(events, o, kRangeCoverage)) continue;
    if (!best || o.events.size() > best->events.size()) best = &o;
  }
  if (best) return {Cut::How::Ranges, best, nullptr};
  return {};
}

// The `n`-th (1-based) of `items` starting at or after `from`, or items.end().
std::vector<EventIndex>::const_iterator nth_from(const Events& events, const std::vector<EventIndex>& items,
                                                int64_t from, size_t n) {
  const auto first = first_from(events, items, from);
  if (n == 0 || static_cast<size_t>(items.end() - first) < n) return items.end();
  return first + static_cast<std::ptrdiff_t>(n - 1);
}

// Iteration intervals inside [from, to) of the thread. `from`/`to` bound the first and last iteration
// where the anchors leave them open.
std::vector<Interval> cut_iterations(const Events& events, const Cut& cut, int64_t from, int64_t to) {
  std::vector<Interval> out;
  const std::vector<EventIndex>& at = cut.anchor->events;
  switch (cut.how) {
    case Cut::How::AtStarts:
      for (size_t k = 0; k < at.size(); ++k) {
        int64_t start = events.ts_ns[at[k]];
        int64_t end = k + 1 < at.size() ? events.ts_ns[at[k + 1]] : to;
        // The last iteration ends with its (last) optimizer step when one follows; else at the stretch's
        // end. An anchor after the last optimizer step opens no iteration: the fetch that found the loader
        // empty, a zero_grad after the loop.
        if (k + 1 == at.size() && cut.closing) {
          if (first_from(events, cut.closing->events, start) == cut.closing->events.end()) break;
          const auto closing = nth_from(events, cut.closing->events, start, cut.closing_per_iteration);
          if (closing != cut.closing->events.end()) end = std::min(to, events.end_ns(*closing));
        }
        out.push_back({start, std::max(start, end)});
      }
      break;
    case Cut::How::AfterEnds:
      for (size_t k = 0; k < at.size(); ++k) {
        int64_t start = k == 0 ? from : events.end_ns(at[k - 1]);
        int64_t end = events.end_ns(at[k]);
        out.push_back({start, std::max(start, end)});
      }
      break;
    case Cut::How::Ranges:
      for (EventIndex e : at) out.push_back({events.ts_ns[e], events.end_ns(e)});
      break;
    case Cut::How::None:
      break;
  }
  return out;
}

// " and holds one `Optimizer.step#…`" (or N of them), when optimizer steps confirm the cut.
std::string holds(const Timeline& timeline, const Cut& cut) {
  if (!cut.closing || cut.closing_per_iteration == 0) return {};
  const size_t n = cut.closing_per_iteration;
  return " and holds " + (n == 1 ? std::string("one") : std::to_string(n)) + " `" +
         shorten(timeline.strings.view(cut.closing->name), 60) + "`";
}

std::string describe_cut(const Timeline& timeline, const Cut& cut) {
  const std::string_view anchor = timeline.strings.view(cut.anchor->name);
  std::string name = "`" + (cut.anchor->numbered ? shorten(numbered_prefix(anchor), 66) + "<N>"
                                                 : shorten(anchor, 70)) + "`";
  switch (cut.how) {
    case Cut::How::AtStarts:
      return "each starts at " + name + holds(timeline, cut);
    case Cut::How::AfterEnds:
      return "each ends with " + name;
    case Cut::How::Ranges:
      return "each is one " + name + " range" + holds(timeline, cut);
    case Cut::How::None:
      break;
  }
  return {};
}

// The thread with the most anchor and range occurrences; ties go to the process's main thread.
uint32_t anchor_thread(const Timeline& timeline, const NameClasses& names) {
  uint32_t best = kNone;
  size_t best_count = 0;
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    if (timeline.tracks[t].kind != TrackKind::Cpu) continue;
    size_t count = 0;
    for (EventIndex i : timeline.track_events[t]) {
      if (!is_op_or_annotation(timeline.events.kind[i])) continue;
      if ((names.by_name[timeline.events.name[i]] & kAnchor) != 0) ++count;
    }
    const Track& track = timeline.tracks[t];
    bool is_main = track.pid >= 0 && track.pid == track.tid;
    if (count > best_count || (count == best_count && count > 0 && is_main)) {
      best = t;
      best_count = count;
    }
  }
  return best;
}

// Iterations cut after each optimizer step open the first one at the thread's first event, which is where
// profiling started: when that was inside an iteration (a profiler entered between forward and backward),
// the first holds a fragment of one. It is left out when, against the median other iteration (two others
// at least), it holds under half the thread's events, or fewer events in under half the time.
void leave_out_first_fragment(const Timeline& timeline, uint32_t track, Analysis& analysis) {
  std::vector<Step>& steps = analysis.steps;
  if (steps.size() < 3) return;
  const Events& events = timeline.events;
  const auto& on_track = timeline.track_events[track];
  // One pass over the thread: each op or annotation counts in the step whose interval holds its start.
  std::vector<size_t> counts(steps.size(), 0);
  std::vector<int64_t> lengths;
  for (const Step& step : steps) lengths.push_back(step.end_ns - step.start_ns);
  auto start = [](const Step& s) { return s.start_ns; };
  auto end = [](const Step& s) { return s.end_ns; };
  for (EventIndex i : on_track) {
    if (!is_op_or_annotation(events.kind[i])) continue;
    const uint32_t k = step_containing(steps, events.ts_ns[i], start, end);
    if (k != kNone) ++counts[k];
  }
  auto median_of_others = [](auto values) {
    std::sort(values.begin() + 1, values.end());
    return values[1 + (values.size() - 1) / 2];
  };
  const size_t median_count = median_of_others(counts);
  const int64_t median_length = median_of_others(lengths);
  const bool fragment = 2 * counts.front() < median_count ||
                        (counts.front() < median_count && 2 * lengths.front() < median_length);
  if (!fragment) return;
  steps.front().partial = true;
  char text[160];
  std::snprintf(text, sizeof text, "; the first (%zu events in %.3f ms, against a median of %zu in %.3f ms) began "
                "before profiling did: left out", counts.front(), static_cast<double>(lengths.front()) / 1e6,
                median_count, static_cast<double>(median_length) / 1e6);
  analysis.step_note += text;
}

}  // namespace

bool find_annotation_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis) {
  const Events& events = timeline.events;
  struct Candidate {
    uint32_t track = kNone;
    std::vector<Occurrences> found;  // `cut` points into it (a moved vector keeps its elements in place)
    Cut cut;
    std::vector<Interval> cuts;
    size_t ops = 0;  // the thread's ops and annotations
  };
  auto evaluate = [&](uint32_t track) -> std::optional<Candidate> {
    const auto& on_track = timeline.track_events[track];
    // The stretch of the thread its ops and annotations cover (nested ones lie inside their parents; with
    // `with_stack`, Python frames are the parents of every op, so none is at the top).
    int64_t from = std::numeric_limits<int64_t>::max(), to = std::numeric_limits<int64_t>::min();
    size_t ops = 0;
    for (EventIndex i : on_track) {
      if (!is_op_or_annotation(events.kind[i])) continue;
      from = std::min(from, events.ts_ns[i]);
      to = std::max(to, events.end_ns(i));
      ++ops;
    }
    if (from > to) return std::nullopt;
    Candidate c;
    c.track = track;
    c.ops = ops;
    c.found = collect(timeline, names, track, from, to + 1);
    c.cut = choose_cut(timeline, c.found);
    if (c.cut.how == Cut::How::None) return std::nullopt;
    c.cuts = cut_iterations(events, c.cut, from, to);
    return c;
  };
  auto is_main = [&](uint32_t track) {
    const Track& t = timeline.tracks[track];
    return t.pid >= 0 && t.pid == t.tid;
  };
  // Anchors live on the thread running the training loop. Without a thread whose anchors cut iterations,
  // the thread whose ranges cut the most, then the busiest, then the process's main thread: never the one
  // that merely has the lowest thread id (another run of the same program numbers its threads otherwise).
  std::optional<Candidate> chosen;
  const uint32_t anchored = anchor_thread(timeline, names);
  if (anchored != kNone) chosen = evaluate(anchored);
  if (!chosen) {
    for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
      if (timeline.tracks[t].kind != TrackKind::Cpu || t == anchored) continue;
      std::optional<Candidate> c = evaluate(t);
      if (!c) continue;
      const bool better = !chosen || c->cuts.size() > chosen->cuts.size() ||
                          (c->cuts.size() == chosen->cuts.size() &&
                           (c->ops > chosen->ops || (c->ops == chosen->ops && is_main(t) && !is_main(chosen->track))));
      if (better) chosen = std::move(c);
    }
  }
  if (!chosen) return false;
  const uint32_t track = chosen->track;
  const Cut& cut = chosen->cut;
  const std::vector<Interval>& cuts = chosen->cuts;
  for (size_t k = 0; k < cuts.size(); ++k) {
    Step step;
    step.number = static_cast<int64_t>(k);
    step.start_ns = cuts[k].start_ns;
    step.end_ns = cuts[k].end_ns;
    // A range ends with itself; a start-anchored iteration holds one optimizer step, with which the last
    // one ends. (After-end anchors end every iteration alike, the last one too.)
    if (cut.how == Cut::How::Ranges) step.anchor_end_ns = cuts[k].end_ns;
    if (cut.how == Cut::How::AtStarts && cut.closing != nullptr) {
      const auto closing =
          nth_from(events, cut.closing->events, cuts[k].start_ns, std::max<size_t>(1, cut.closing_per_iteration));
      const bool last = k + 1 == cuts.size();  // it ends with its optimizer step's end
      if (closing != cut.closing->events.end() && (last || events.ts_ns[*closing] < cuts[k].end_ns)) {
        step.anchor_end_ns = events.end_ns(*closing);
      }
    }
    analysis.steps.push_back(step);
  }
  analysis.main_track = track;
  analysis.step_source = StepSource::Annotations;
  analysis.step_note = "no ProfilerStep markers; " + std::to_string(cuts.size()) + " iterations on thread " +
                       std::string(timeline.strings.view(timeline.tracks[track].tid_text)) + ": " +
                       describe_cut(timeline, cut);
  if (cut.how == Cut::How::AfterEnds) leave_out_first_fragment(timeline, track, analysis);
  return true;
}

void split_marker_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis) {
  if (analysis.steps.empty() || analysis.main_track == kNone) return;
  const Events& events = timeline.events;
  // Unambiguous only: every step holds the same number (>= 2) of iterations, cut the same way.
  std::vector<std::vector<Interval>> parts;
  std::string how;
  size_t per_step = 0;
  for (const Step& step : analysis.steps) {
    std::vector<Occurrences> found = collect(timeline, names, analysis.main_track, step.start_ns, step.end_ns);
    Cut cut = choose_cut(timeline, found);
    if (cut.how == Cut::How::None || cut.how == Cut::How::Ranges) return;
    // A step that fetches batches is split by its fetches or not at all: one batch is one iteration, however
    // many optimizers step in it (a GAN's two zero_grads are not two iterations).
    for (const Occurrences& o : found) {
      if ((o.classes & kDataLoader) != 0 && (o.classes & kIterationStart) != 0 && &o != cut.anchor) return;
    }
    std::vector<Interval> cuts = cut_iterations(events, cut, step.start_ns, step.end_ns);
    if (cuts.empty()) return;
    if (per_step == 0) per_step = cuts.size();
    if (cuts.size() != per_step) return;
    // The first iteration opens with the step, the last closes with it.
    cuts.front().start_ns = step.start_ns;
    cuts.back().end_ns = step.end_ns;
    if (how.empty()) how = describe_cut(timeline, cut);
    parts.push_back(std::move(cuts));
  }
  if (per_step < 2) return;
  std::vector<Step> split;
  for (size_t s = 0; s < analysis.steps.size(); ++s) {
    for (const Interval& part : parts[s]) {
      Step step = analysis.steps[s];
      step.start_ns = part.start_ns;
      step.end_ns = std::max(part.start_ns, part.end_ns);
      split.push_back(step);
    }
  }
  analysis.steps = std::move(split);
  analysis.step_note += "; each holds " + std::to_string(per_step) + " iterations (" + how +
                        "), counted as " + std::to_string(analysis.steps.size()) + " steps";
}

}  // namespace ptadvise::detail
