// Steps inferred from the kernel sequence of the busiest device (docs/ANALYSIS.md, "Inferred"), and what
// keeps a repeating sequence from being taken for steps: windows inside one host call, or framed by
// kernels that run once before and after them (a model call's layers repeat as exactly as iterations do).
#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "analysis_detail.h"
#include "numbers.h"

namespace ptadvise::detail {
namespace {

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser: a well-spread value per name for multiset hashing
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Nesting deeper than this is not looked through (hostile traces nest tens of thousands of ops): a launch
// that deep counts as having no enclosing host event, as before this check existed.
constexpr size_t kHostNestingLimit = 1024;

// PyTorch's profiler records each call of an nn.Module (`with_stack` or `with_modules`) as a Python frame
// named "nn.Module: NAME_N". Other Python frames are not calls here: with `with_stack`, a training loop's
// own function (or `<module>`) encloses all of its iterations.
constexpr std::string_view kModuleFramePrefix = "nn.Module: ";

// What counts as a host call that windows of kernels can lie inside.
class HostCalls {
 public:
  explicit HostCalls(const Timeline& timeline) : events_(timeline.events), module_name_(timeline.strings.size(), 0) {
    for (StringId id = 0; id < timeline.strings.size(); ++id) {
      module_name_[id] = timeline.strings.view(id).starts_with(kModuleFramePrefix) ? 1 : 0;
    }
  }
  const Events& events() const { return events_; }
  bool is_module_call(EventIndex e) const {
    return events_.kind[e] == EventKind::PythonFunction && module_name_[events_.name[e]] != 0;
  }
  bool is_call(EventIndex e) const { return is_op_or_annotation(events_.kind[e]) || is_module_call(e); }

 private:
  const Events& events_;
  std::vector<uint8_t> module_name_;  // per string: names an nn.Module call
};

// The host calls (CPU ops, annotations, nn.Module calls) enclosing `kernel`'s launch call, outermost first;
// empty when it has no launch call or is nested beyond kHostNestingLimit.
void host_ancestors(const HostCalls& calls, EventIndex kernel, std::vector<EventIndex>& out) {
  const Events& events = calls.events();
  out.clear();
  const EventIndex call = events.launch[kernel];
  if (call == kNone) return;
  size_t walked = 0;
  for (EventIndex e = events.parent[call]; e != kNone; e = events.parent[e]) {
    if (++walked > kHostNestingLimit) {
      out.clear();
      return;
    }
    if (calls.is_call(e)) out.push_back(e);
  }
  std::reverse(out.begin(), out.end());
}

// Where a window of kernels was launched from: the host calls enclosing the launch calls of all of them
// (kernels without a launch call are left out), outermost first, so the last is the innermost; empty when
// the launches span top-level calls. Every list starts at the top of its thread, so what encloses every
// launch is their common beginning: linear in the nesting depth.
std::vector<EventIndex> window_home(const HostCalls& calls, const EventIndex* kernels, size_t count) {
  const Events& events = calls.events();
  std::vector<EventIndex> home, ancestors;
  bool first = true;
  for (size_t k = 0; k < count; ++k) {
    if (events.launch[kernels[k]] == kNone) continue;
    host_ancestors(calls, kernels[k], ancestors);
    if (first) {
      home = ancestors;
      first = false;
      continue;
    }
    size_t common = 0;
    while (common < home.size() && common < ancestors.size() && home[common] == ancestors[common]) ++common;
    home.resize(common);
    if (home.empty()) break;
  }
  return home;
}

// CPU ops and annotations only (module frames skipped): one home encloses the other (or is it) exactly
// when the shorter list of ops begins the longer one; that shorter list's innermost op holds both windows.
// kNone when it does not, or when either home holds no op.
EventIndex innermost_shared_op(const Events& events, const std::vector<EventIndex>& a, const std::vector<EventIndex>& b) {
  auto next_op = [&events](const std::vector<EventIndex>& list, size_t at) {
    while (at < list.size() && !is_op_or_annotation(events.kind[list[at]])) ++at;
    return at;
  };
  EventIndex shared = kNone;
  for (size_t i = next_op(a, 0), j = next_op(b, 0); i < a.size() && j < b.size();
       i = next_op(a, i + 1), j = next_op(b, j + 1)) {
    if (a[i] != b[j]) return kNone;
    shared = a[i];
  }
  return shared;
}

// The host call that some boundary between consecutive windows lies inside, else kNone: the launch call
// the kernels on both sides of it came from (a cudaGraphLaunch replaying a whole graph); an nn.Module call
// enclosing both windows (a model's layers, even when each layer is a module call of its own); or the CPU
// op or annotation both windows were launched from inside (the same one, or one inside the other's).
// Windows launched from separate calls (two annotated forwards, two aten ops, two calls of the model) or
// from top-level calls pass.
EventIndex boundary_inside_host_call(const HostCalls& calls, const std::vector<EventIndex>& sequence, size_t offset,
                                     size_t period, size_t windows) {
  const Events& events = calls.events();
  std::vector<EventIndex> previous = window_home(calls, sequence.data() + offset, period);
  for (size_t w = 1; w < windows; ++w) {
    const size_t first = offset + w * period;
    const EventIndex call = events.launch[sequence[first]];
    if (call != kNone && call == events.launch[sequence[first - 1]]) return call;
    std::vector<EventIndex> home = window_home(calls, sequence.data() + first, period);
    // What encloses both windows is the lists' common beginning; the innermost module call in it holds both.
    size_t common = 0;
    while (common < previous.size() && common < home.size() && previous[common] == home[common]) ++common;
    for (size_t i = common; i-- > 0;) {
      if (calls.is_module_call(home[i])) return home[i];
    }
    if (const EventIndex op = innermost_shared_op(events, previous, home); op != kNone) return op;
    previous = std::move(home);
  }
  return kNone;
}

// Kernels left outside the windows (fewer than a period) whose names no window runs, before the first
// window and after the last: one-off work on both sides of the repeats — a prologue and an epilogue, as one
// model call has around its layers (an embedding before, a head after). A loop profiled mid-run leaves
// parts of iterations there instead. `outside` is all zeros per name, and is left so.
std::pair<size_t, size_t> one_offs_around(const Events& events, const std::vector<EventIndex>& sequence,
                                          const std::vector<uint32_t>& occurrences, std::vector<uint32_t>& outside,
                                          size_t first, size_t end) {
  const size_t count = sequence.size();
  for (size_t k = 0; k < first; ++k) ++outside[events.name[sequence[k]]];
  for (size_t k = end; k < count; ++k) ++outside[events.name[sequence[k]]];
  auto in_no_window = [&](size_t from, size_t to) {
    size_t found = 0;
    for (size_t k = from; k < to; ++k) {
      const StringId name = events.name[sequence[k]];
      if (outside[name] == occurrences[name]) ++found;
    }
    return found;
  };
  const std::pair<size_t, size_t> found{in_no_window(0, first), in_no_window(end, count)};
  for (size_t k = 0; k < first; ++k) outside[events.name[sequence[k]]] = 0;
  for (size_t k = end; k < count; ++k) outside[events.name[sequence[k]]] = 0;
  return found;
}

}  // namespace

// Infers steps from the kernel sequence of the busiest device: a kernel name whose occurrences are evenly
// spaced (every L kernels) gives a candidate period L; it is accepted when the sequence splits into at
// least two windows of L kernels that hold the same multiset of names, the windows are not framed by
// one-off kernels on both sides (one_offs_around), and no boundary between windows lies inside one host
// call (boundary_inside_host_call): a model call's layers repeat too. The fewest, longest periods win (a
// whole training step rather than one layer of it).
// `inside_call` tells, when the longest period found was refused as parts of one call, what repeats and
// where (for the whole window's note).
bool infer_steps(const Timeline& timeline, Analysis& analysis, std::string& inside_call) {
  const Events& events = timeline.events;
  std::vector<std::vector<EventIndex>> kernels_by_device;
  std::vector<int32_t> device_ids;
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    const Track& track = timeline.tracks[t];
    if (track.kind != TrackKind::Gpu) continue;
    auto it = std::find(device_ids.begin(), device_ids.end(), track.device);
    size_t slot = static_cast<size_t>(it - device_ids.begin());
    if (it == device_ids.end()) {
      device_ids.push_back(track.device);
      kernels_by_device.emplace_back();
    }
    for (EventIndex i : timeline.track_events[t]) {
      if (events.kind[i] == EventKind::Kernel) kernels_by_device[slot].push_back(i);
    }
  }
  size_t busiest = kNone;
  for (size_t d = 0; d < kernels_by_device.size(); ++d) {
    if (busiest == kNone || kernels_by_device[d].size() > kernels_by_device[busiest].size()) busiest = d;
  }
  if (busiest == kNone) return false;
  std::vector<EventIndex>& sequence = kernels_by_device[busiest];
  const size_t count = sequence.size();
  if (count < 2) return false;
  std::sort(sequence.begin(), sequence.end(), [&events](EventIndex a, EventIndex b) {
    if (events.ts_ns[a] != events.ts_ns[b]) return events.ts_ns[a] < events.ts_ns[b];
    return events.track[a] != events.track[b] ? events.track[a] < events.track[b] : a < b;
  });

  // Occurrences per name, and prefix sums of per-name hashes for O(1) window multiset comparison.
  std::vector<uint32_t> occurrences(timeline.strings.size(), 0);
  for (EventIndex i : sequence) ++occurrences[events.name[i]];
  std::vector<uint64_t> prefix(count + 1, 0);
  for (size_t k = 0; k < count; ++k) prefix[k + 1] = prefix[k] + mix64(events.name[sequence[k]]);
  auto window_hash = [&prefix](size_t from, size_t length) { return prefix[from + length] - prefix[from]; };

  // Candidate periods from evenly spaced names: (occurrences, period, name).
  struct Candidate {
    size_t occurrences;
    size_t period;
    StringId name;
  };
  std::vector<Candidate> candidates;
  {
    std::vector<size_t> last_position(timeline.strings.size(), kNone);
    std::vector<size_t> gap(timeline.strings.size(), 0);
    std::vector<uint8_t> regular(timeline.strings.size(), 1);
    for (size_t k = 0; k < count; ++k) {
      StringId name = events.name[sequence[k]];
      if (last_position[name] != kNone) {
        size_t distance = k - last_position[name];
        if (gap[name] == 0) gap[name] = distance;
        else if (gap[name] != distance) regular[name] = 0;
      }
      last_position[name] = k;
    }
    for (StringId name = 0; name < occurrences.size(); ++name) {
      if (occurrences[name] < 2 || !regular[name] || gap[name] == 0) continue;
      if (count / gap[name] < 2) continue;
      candidates.push_back({occurrences[name], gap[name], name});
    }
  }
  // Equal periods: by the name's text, not its id (ids follow the file's event order).
  std::sort(candidates.begin(), candidates.end(), [&timeline](const Candidate& a, const Candidate& b) {
    if (a.period != b.period) return a.period > b.period;
    return timeline.strings.view(a.name) < timeline.strings.view(b.name);
  });

  size_t chosen_period = 0, chosen_offset = 0, chosen_windows = 0;
  StringId chosen_name = 0;
  size_t tried_period = 0;
  std::optional<HostCalls> calls;  // built for the first period whose windows match
  std::vector<uint32_t> outside;   // per name, for one_offs_around
  for (const Candidate& candidate : candidates) {
    if (candidate.period == tried_period) continue;
    tried_period = candidate.period;
    const size_t period = candidate.period;
    const size_t windows = count / period;
    const size_t slack = count - windows * period;
    int64_t best_score = std::numeric_limits<int64_t>::min();
    size_t best_offset = kNone;
    for (size_t offset = 0; offset <= slack; ++offset) {
      uint64_t first = window_hash(offset, period);
      bool same = true;
      for (size_t w = 1; w < windows && same; ++w) same = window_hash(offset + w * period, period) == first;
      if (!same) continue;
      // Prefer boundaries where the GPU waited: step boundaries usually sit in host-side gaps.
      int64_t score = 0;
      for (size_t w = offset == 0 ? 1 : 0; w < windows; ++w) {
        size_t k = offset + w * period;
        score += events.ts_ns[sequence[k]] - events.end_ns(sequence[k - 1]);
      }
      if (score > best_score) {
        best_score = score;
        best_offset = offset;
      }
    }
    if (best_offset == kNone) continue;
    if (!calls) calls.emplace(timeline);
    if (const EventIndex call = boundary_inside_host_call(*calls, sequence, best_offset, period, windows); call != kNone) {
      if (inside_call.empty()) {
        inside_call = "the kernel sequence repeats every " + std::to_string(period) + " kernels only inside one call (" +
                      shorten(timeline.strings.view(events.name[call]), 60) + "), as the layers of a call do";
      }
      continue;
    }
    if (outside.empty()) outside.assign(timeline.strings.size(), 0);
    if (const auto [before, after] =
            one_offs_around(events, sequence, occurrences, outside, best_offset, best_offset + windows * period);
        before > 0 && after > 0) {
      if (inside_call.empty()) {
        inside_call = "the kernel sequence repeats every " + std::to_string(period) +
                      " kernels only between kernels that run once (" + std::to_string(before) + " before it, " +
                      std::to_string(after) + " after), as the layers of one model call do (if they are " +
                      "iterations, call prof.step() every iteration)";
      }
      continue;
    }
    chosen_period = period;
    chosen_offset = best_offset;
    chosen_windows = windows;
    chosen_name = candidate.name;
    break;
  }
  if (chosen_period == 0) return false;

  // A step's CPU interval runs from the earliest launch of its kernels to the next step's start.
  auto host_time = [&events](EventIndex kernel) {
    EventIndex call = events.launch[kernel];
    return call != kNone ? events.ts_ns[call] : events.ts_ns[kernel];
  };
  auto host_end = [&events](EventIndex kernel) {
    EventIndex call = events.launch[kernel];
    return call != kNone ? events.end_ns(call) : events.end_ns(kernel);
  };
  for (size_t w = 0; w < chosen_windows; ++w) {
    Step step;
    step.number = static_cast<int64_t>(w);
    step.start_ns = std::numeric_limits<int64_t>::max();
    int64_t latest_end = std::numeric_limits<int64_t>::min();
    for (size_t k = chosen_offset + w * chosen_period; k < chosen_offset + (w + 1) * chosen_period; ++k) {
      step.start_ns = std::min(step.start_ns, host_time(sequence[k]));
      latest_end = std::max(latest_end, host_end(sequence[k]));
    }
    step.end_ns = latest_end;
    analysis.steps.push_back(step);
  }
  for (size_t w = 0; w + 1 < analysis.steps.size(); ++w) {
    analysis.steps[w].end_ns = std::max(analysis.steps[w].start_ns, analysis.steps[w + 1].start_ns);
  }
  analysis.step_source = StepSource::Inferred;
  analysis.step_note = "no ProfilerStep markers; " + std::to_string(chosen_windows) +
                       " steps inferred from the kernel sequence of GPU " + std::to_string(device_ids[busiest]) +
                       ", which repeats every " + std::to_string(chosen_period) + " kernels (anchor kernel: " +
                       shorten(timeline.strings.view(chosen_name), 60) + ")";
  return true;
}

}  // namespace ptadvise::detail
