// Each step's period, the leading warm-up steps and a cut-short last step (docs/ANALYSIS.md, "Steps":
// "Warm-up and cut-short steps"), once the steps are found and their events assigned.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis_detail.h"
#include "numbers.h"

namespace ptadvise::detail {
namespace {

// Warm-up: a leading step this much longer than the median of the later steps ...
constexpr double kWarmupRatio = 1.5;
// ... or this much longer while doing one-off work (allocations, autotuning) the later steps do not.
constexpr double kWarmupRatioWithOneOffWork = 1.1;

}  // namespace

void measure_periods(const Timeline& timeline, const NameClasses& names, Analysis& analysis) {
  std::vector<Step>& steps = analysis.steps;
  const size_t n = steps.size();
  const Events& events = timeline.events;
  // Where each step's own GPU work starts: its first GPU op launched inside it. Ops without a launch call
  // (work queued before profiling began, CUDA graph kernels) only stand in when a step has no other.
  std::vector<int64_t> gpu_first(n, -1);
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (!is_gpu_activity(events.kind[i]) || events.launch[i] == kNone) continue;
    uint32_t s = analysis.event_step[i];
    if (s < n && (gpu_first[s] < 0 || events.ts_ns[i] < gpu_first[s])) gpu_first[s] = events.ts_ns[i];
  }
  for (size_t k = 0; k < n; ++k) {
    if (gpu_first[k] < 0) gpu_first[k] = steps[k].gpu_start_ns;
  }
  // A lone step ends at its marker's end, unless it records nothing for most of its length: a ProfilerStep
  // left open when profiling stopped is closed at the stop, possibly seconds after its last event, and that
  // tail is no part of the iteration. (With several steps, a cut-short last one is found below.) Only a
  // lone step needs this pass over the events.
  int64_t last_content_end = std::numeric_limits<int64_t>::min();
  if (n == 1) {
    for (EventIndex i = 0; i < events.size(); ++i) {
      if (analysis.event_step[i] != 0 || i == steps[0].marker) continue;
      const EventKind kind = events.kind[i];
      if (kind == EventKind::MemoryInstant || kind == EventKind::Instant || kind == EventKind::Other) continue;
      last_content_end = std::max(last_content_end, events.end_ns(i));
    }
  }
  std::vector<int64_t> host_periods, gpu_periods;
  for (size_t k = 0; k < n; ++k) {
    Step& step = steps[k];
    int64_t host_end = step.end_ns;
    // Only a tail longer than everything recorded before it: a loop's own idle at the end of its last
    // iteration is real time, a step that records nothing for most of its length was closed by the stop.
    if (n == 1 && last_content_end > step.start_ns && last_content_end < host_end &&
        host_end - last_content_end > last_content_end - step.start_ns) {
      host_end = last_content_end;
    }
    step.host_end_ns = host_end;
    int64_t host = k + 1 < n ? steps[k + 1].start_ns - step.start_ns : host_end - step.start_ns;
    int64_t gpu = 0;
    if (gpu_first[k] >= 0) {
      gpu = k + 1 < n && gpu_first[k + 1] >= 0 ? gpu_first[k + 1] - gpu_first[k] : step.gpu_end_ns - gpu_first[k];
    }
    step.period_ns = std::max<int64_t>(0, std::max(host, gpu));
    host_periods.push_back(host);
    gpu_periods.push_back(gpu_first[k] >= 0 ? gpu : 0);
  }
  // One time base for all steps, so that windows tile time: the GPU's when it sets the pace.
  auto middle = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  };
  const bool gpu_paced = middle(gpu_periods) > middle(host_periods);
  for (size_t k = 0; k < n; ++k) {
    steps[k].period_start_ns = gpu_paced && gpu_first[k] >= 0 ? gpu_first[k] : steps[k].start_ns;
  }
  // A whole-window "step" has no iteration boundaries, only the moments profiling started and stopped:
  // the host waiting at the opening for work queued before profiling, or setting up before the first
  // launch, is no part of the GPU work measured. It is timed from its first GPU op to the end of its last.
  if (analysis.step_source == StepSource::WholeWindow && n == 1 && steps[0].gpu_start_ns >= 0 &&
      steps[0].gpu_end_ns > steps[0].gpu_start_ns) {
    steps[0].period_start_ns = steps[0].gpu_start_ns;
    steps[0].period_ns = steps[0].gpu_end_ns - steps[0].gpu_start_ns;
    steps[0].gpu_span_only = true;
    analysis.step_note += "; timed from its first GPU op to the end of its last (the window's edges are where "
                          "profiling started and stopped)";
  }
  if (n < 2) return;
  // The last step has no successor to measure against: when profiling stopped inside it, it holds far
  // less work (events) than the others and is not a whole iteration. (A warm-up step is long but holds
  // the same work, so event counts, not durations, tell the two apart.)
  {
    std::vector<int64_t> events_per_step(n, 0);
    for (uint32_t s : analysis.event_step) {
      if (s < n) ++events_per_step[s];
    }
    std::vector<int64_t> others(events_per_step.begin(), events_per_step.end() - 1);
    std::sort(others.begin(), others.end());
    bool others_have_gpu = false;
    for (size_t k = 0; k + 1 < n; ++k) others_have_gpu = others_have_gpu || steps[k].gpu_start_ns >= 0;
    // One other step is no norm to compare with, unless the last step lacks the GPU work it has, or is a
    // stub of it: a tenth of its events in a tenth of its time (a ProfilerStep opened just before the stop).
    const bool stub = 10 * events_per_step.back() < others.front() && 10 * steps.back().period_ns < steps.front().period_ns;
    bool comparable = others.size() >= 2 || (others_have_gpu && steps.back().gpu_start_ns < 0) || stub;
    if (comparable && 2 * events_per_step.back() < others[others.size() / 2]) {
      steps.back().partial = true;
      analysis.partial_note = "the last step holds less than half the events of the others (as when profiling "
                              "stops inside a step): left out";
    }
    // Steps inferred from the kernel sequence run from one window's first launch to the next one's; the
    // last ends with its own last launch, so its period lacks the host time before the next iteration's
    // launches (data loading, Python) that every other period holds. It is left out while two others remain.
    if (analysis.step_source == StepSource::Inferred && n >= 3 && !steps.back().partial) {
      steps.back().partial = true;
      analysis.partial_note = "the last step ends with its own last launch (there is no next step to time it "
                              "against, and it lacks the host time before one): left out";
    }
    // Likewise the last annotation iteration when it ends with its anchor (an optimizer step, a range) and
    // the others hold time after theirs: more than 1% of their period (the precision every period figure
    // is given to), so that the last one's period would be short by it.
    if (analysis.step_source == StepSource::Annotations && n >= 3 && steps.back().anchor_end_ns >= 0) {
      std::vector<int64_t> tails, periods;
      for (size_t k = 0; k + 1 < n; ++k) {
        if (steps[k].anchor_end_ns < 0) continue;
        tails.push_back(std::max<int64_t>(0, steps[k + 1].start_ns - steps[k].anchor_end_ns));
        periods.push_back(steps[k].period_ns);
      }
      if (!tails.empty() && 100 * middle(tails) > middle(periods) && !steps.back().partial) {
        steps.back().partial = true;
        char tail[48];
        std::snprintf(tail, sizeof tail, "%.3f ms", static_cast<double>(middle(tails)) / 1e6);
        analysis.partial_note = "the last iteration ends where its optimizer step or range does, without the " +
                                std::string(tail) + " (median) that follow them in the others: left out";
      }
    }
  }
  const size_t whole = steps.back().partial ? n - 1 : n;
  // One-off work per step (host calls, by the step they run in).
  std::vector<int64_t> one_off(n, 0), kernels(n, 0);
  for (EventIndex i = 0; i < events.size(); ++i) {
    uint32_t s = analysis.event_step[i];
    if (s >= n) continue;
    if (events.kind[i] == EventKind::Kernel) ++kernels[s];
    if ((names.by_name[events.name[i]] & kOneOffWork) == 0 || is_gpu_side(events.kind[i])) continue;
    ++one_off[s];
  }
  auto median = [](std::vector<int64_t> values) {
    std::sort(values.begin(), values.end());
    size_t m = values.size();
    return m % 2 == 1 ? static_cast<double>(values[m / 2])
                      : (static_cast<double>(values[m / 2 - 1]) + static_cast<double>(values[m / 2])) / 2.0;
  };
  // Leading steps only: the first step that looks like the rest ends the warm-up; the last step never is.
  const size_t first = steps.front().partial ? 1 : 0;  // a fragment left out before (profiling began in it)
  size_t warm = first;
  double reference = 0;
  for (size_t k = first; k + 1 < whole; ++k) {
    std::vector<int64_t> later_periods, later_one_off, later_kernels;
    for (size_t j = k + 1; j < whole; ++j) {
      later_periods.push_back(steps[j].period_ns);
      later_one_off.push_back(one_off[j]);
      later_kernels.push_back(kernels[j]);
    }
    double ref = median(later_periods);
    double ratio = ref > 0 ? static_cast<double>(steps[k].period_ns) / ref : 0.0;
    // A step nearly as long (3/4 of it) again after the loop has run at the steady pace says such lengths
    // are part of the steady state (a data loader falling behind now and then), not a warm-up: length
    // alone does not count then. (A warm-up that fades over several steps has no steady step before them.)
    bool alone_in_length = true;
    bool steady_seen = false;
    for (int64_t later : later_periods) {
      if (steady_seen && 4 * later >= 3 * steps[k].period_ns) alone_in_length = false;
      steady_seen = steady_seen || static_cast<double>(later) < kWarmupRatio * ref;
    }
    bool extra_work = static_cast<double>(one_off[k]) > median(later_one_off);
    // Length alone needs a steady state to compare with (two later steps at least), and the same GPU work:
    // a first step that launches far more kernels is longer because it does more (a prologue before the
    // repeating sequence, another phase), not because it warms up. One-off work is evidence of its own.
    bool same_work = static_cast<double>(kernels[k]) <= kWarmupRatio * median(later_kernels);
    bool far_longer = ratio >= kWarmupRatio && later_periods.size() >= 2 && same_work && alone_in_length;
    if (far_longer || (extra_work && ratio >= kWarmupRatioWithOneOffWork)) {
      steps[k].warmup = true;
      warm = k + 1;
      reference = ref;
      continue;
    }
    break;
  }
  if (warm == first) return;
  int64_t one_off_calls = 0, warm_ns = 0;
  for (size_t k = first; k < warm; ++k) {
    one_off_calls += one_off[k];
    warm_ns += steps[k].period_ns;
  }
  char buffer[160];
  const size_t warm_steps = warm - first;
  std::snprintf(buffer, sizeof buffer, "%zu leading step%s (%.3f ms in all, against a steady period of %.3f ms",
                warm_steps, warm_steps == 1 ? "" : "s", static_cast<double>(warm_ns) / 1e6, reference / 1e6);
  analysis.warmup_note = buffer;
  if (one_off_calls > 0) {
    analysis.warmup_note += "; " + std::to_string(one_off_calls) + " one-off call" + (one_off_calls == 1 ? "" : "s") +
                            " such as cudaMalloc/cudaFree or cuDNN autotuning";
  }
  analysis.warmup_note += warm_steps == 1 ? ") is warm-up, left out of the per-step figures"
                                    : ") are warm-up, left out of the per-step figures";
}

}  // namespace ptadvise::detail
