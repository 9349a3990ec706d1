// Finding training steps: ProfilerStep#N markers, else iterations from repeating annotations (iterations.cpp),
// else a period inferred from the kernel sequence (step_inference.cpp), else the whole profiled window; then every event is
// assigned to a step and each step's period measured.
#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

#include "analysis_detail.h"
#include "numbers.h"

namespace ptadvise::detail {
namespace {

int64_t marker_number(std::string_view name, int64_t fallback) {
  std::string_view digits = name.substr(std::string_view("ProfilerStep#").size());
  int64_t number = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  return error == std::errc() && end != digits.data() ? number : fallback;
}

std::string thread_label(const Timeline& timeline, uint32_t track) {
  const Track& t = timeline.tracks[track];
  return "thread " + std::string(timeline.strings.view(t.tid_text));
}

// Markers on the thread that carries most of them (ties: the process's main thread, tid == pid).
bool find_marker_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis) {
  const Events& events = timeline.events;
  uint32_t best = kNone;
  size_t best_count = 0;
  bool best_is_main = false;
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    if (timeline.tracks[t].kind != TrackKind::Cpu) continue;
    size_t count = 0;
    for (EventIndex i : timeline.track_events[t]) {
      if (is_op_or_annotation(events.kind[i]) && names.has(timeline, i, kStepMarker)) ++count;
    }
    if (count == 0) continue;
    const Track& track = timeline.tracks[t];
    bool is_main = track.pid >= 0 && track.pid == track.tid;
    if (count > best_count || (count == best_count && is_main && !best_is_main)) {
      best = t;
      best_count = count;
      best_is_main = is_main;
    }
  }
  if (best == kNone) return false;
  for (EventIndex i : timeline.track_events[best]) {
    if (!is_op_or_annotation(events.kind[i]) || !names.has(timeline, i, kStepMarker)) continue;
    // The same marker written twice (as cpu_op and user_annotation) is one step.
    if (!analysis.steps.empty() && analysis.steps.back().start_ns == events.ts_ns[i] &&
        timeline.name(analysis.steps.back().marker) == timeline.name(i)) {
      continue;
    }
    Step step;
    step.number = marker_number(timeline.name(i), static_cast<int64_t>(analysis.steps.size()));
    step.start_ns = events.ts_ns[i];
    step.end_ns = events.end_ns(i);
    step.marker = i;
    analysis.steps.push_back(step);
  }
  analysis.main_track = best;
  analysis.step_source = StepSource::ProfilerStep;
  analysis.step_note = std::to_string(analysis.steps.size()) + " ProfilerStep marker" +
                       (analysis.steps.size() == 1 ? "" : "s") + " on " + thread_label(timeline, best);
  return true;
}

bool counts_for_window(EventKind kind) {
  return kind != EventKind::MemoryInstant && kind != EventKind::Instant && kind != EventKind::Other;
}

// `inside_call`: why a repeating kernel sequence was not taken for steps (infer_steps), or empty.
void whole_window_step(const Timeline& timeline, Analysis& analysis, const std::string& inside_call) {
  const Events& events = timeline.events;
  int64_t start = std::numeric_limits<int64_t>::max();
  int64_t end = std::numeric_limits<int64_t>::min();
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (!counts_for_window(events.kind[i])) continue;
    start = std::min(start, events.ts_ns[i]);
    end = std::max(end, events.end_ns(i));
  }
  analysis.step_source = StepSource::WholeWindow;
  if (start > end) {
    analysis.step_note = "the trace has no timed events: no steps";
    return;
  }
  Step step;
  step.start_ns = start;
  step.end_ns = end;
  analysis.steps.push_back(step);
  analysis.step_note = inside_call.empty()
                            ? "no ProfilerStep markers, no repeating iteration annotations and no repeating kernel sequence: the profiled window is one step"
                            : "no ProfilerStep markers and no repeating iteration annotations; " + inside_call +
                                  ": the profiled window is one step";
}

// The CPU thread that launches most GPU work.
uint32_t busiest_launch_thread(const Timeline& timeline) {
  const Events& events = timeline.events;
  std::vector<size_t> launches(timeline.tracks.size(), 0);
  std::vector<size_t> all(timeline.tracks.size(), 0);
  for (EventIndex i = 0; i < events.size(); ++i) {
    uint32_t track = events.track[i];
    if (track >= timeline.tracks.size() || timeline.tracks[track].kind != TrackKind::Cpu) continue;
    ++all[track];
    EventKind kind = events.kind[i];
    if ((kind == EventKind::Runtime || kind == EventKind::Driver) && events.launch[i] != kNone) ++launches[track];
  }
  uint32_t best = kNone;
  for (uint32_t t = 0; t < timeline.tracks.size(); ++t) {
    if (timeline.tracks[t].kind != TrackKind::Cpu || all[t] == 0) continue;
    if (best == kNone || launches[t] > launches[best] || (launches[t] == launches[best] && all[t] > all[best])) {
      best = t;
    }
  }
  return best;
}

void assign_events(const Timeline& timeline, Analysis& analysis) {
  const Events& events = timeline.events;
  std::vector<Step>& steps = analysis.steps;
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  auto cpu_start = [](const Step& s) { return s.start_ns; };
  auto cpu_end = [](const Step& s) { return s.end_ns; };
  // Host events by time on their thread.
  for (EventIndex i = 0; i < events.size(); ++i) {
    uint32_t track = events.track[i];
    if (track < timeline.tracks.size() && timeline.tracks[track].kind == TrackKind::Cpu) {
      analysis.event_step[i] = step_containing(steps, events.ts_ns[i], cpu_start, cpu_end);
    }
  }
  // GPU ops by their launch; they define each step's GPU extent.
  std::vector<EventIndex> unlaunched;
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (!is_gpu_side(events.kind[i])) continue;
    EventIndex call = events.launch[i];
    if (call == kNone) {
      unlaunched.push_back(i);
      continue;
    }
    uint32_t s = analysis.event_step[call];
    analysis.event_step[i] = s;
    if (s == kNone || !is_gpu_activity(events.kind[i])) continue;
    Step& step = steps[s];
    if (step.gpu_start_ns < 0 || events.ts_ns[i] < step.gpu_start_ns) step.gpu_start_ns = events.ts_ns[i];
    step.gpu_end_ns = std::max(step.gpu_end_ns, events.end_ns(i));
  }
  // GPU ops without a launch call (CUDA graph kernels, traces without runtime events) by time in the span.
  auto span_start = [](const Step& s) { return s.span_start(); };
  auto span_end = [](const Step& s) { return s.span_end(); };
  std::vector<Step> by_span = steps;  // spans are fixed before unlaunched ops widen them
  std::vector<uint32_t> order(steps.size());
  for (uint32_t s = 0; s < order.size(); ++s) order[s] = s;
  std::sort(order.begin(), order.end(),
            [&steps](uint32_t a, uint32_t b) { return steps[a].span_start() < steps[b].span_start(); });
  for (uint32_t s = 0; s < order.size(); ++s) by_span[s] = steps[order[s]];
  for (EventIndex i : unlaunched) {
    uint32_t position = step_containing(by_span, events.ts_ns[i], span_start, span_end);
    if (position == kNone) continue;
    uint32_t s = order[position];
    analysis.event_step[i] = s;
    if (!is_gpu_activity(events.kind[i])) continue;
    Step& step = steps[s];
    if (step.gpu_start_ns < 0 || events.ts_ns[i] < step.gpu_start_ns) step.gpu_start_ns = events.ts_ns[i];
    step.gpu_end_ns = std::max(step.gpu_end_ns, events.end_ns(i));
  }
}

}  // namespace

void find_steps(const Timeline& timeline, const NameClasses& names, Analysis& analysis) {
  analysis.event_step.assign(timeline.events.size(), kNone);
  analysis.steps.clear();
  if (find_marker_steps(timeline, names, analysis)) {
    split_marker_steps(timeline, names, analysis);
  } else {
    analysis.steps.clear();
    if (!find_annotation_steps(timeline, names, analysis)) {
      analysis.steps.clear();
      std::string inside_call;
      if (!infer_steps(timeline, analysis, inside_call)) {
        analysis.steps.clear();
        whole_window_step(timeline, analysis, inside_call);
      }
    }
  }
  if (analysis.main_track == kNone) analysis.main_track = busiest_launch_thread(timeline);
  if (!analysis.steps.empty()) {
    assign_events(timeline, analysis);
    measure_periods(timeline, names, analysis);
  }
}

}  // namespace ptadvise::detail
