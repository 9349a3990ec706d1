// summarize(): the figures of `ptadvise summary`, computed from an Analysis (printing lives in advisor/).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "analysis_detail.h"

namespace ptadvise {
namespace {

constexpr int64_t kTinyKernelNs = 10'000;

std::vector<KernelStat> top_by_time(const Timeline& timeline, const std::vector<int64_t>& count,
                                    const std::vector<int64_t>& total, size_t top_n) {
  std::vector<StringId> ids;
  for (StringId id = 0; id < count.size(); ++id) {
    if (count[id] > 0) ids.push_back(id);
  }
  auto order = [&](StringId a, StringId b) {
    if (total[a] != total[b]) return total[a] > total[b];
    return timeline.strings.view(a) < timeline.strings.view(b);
  };
  size_t keep = std::min(top_n, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), order);
  std::vector<KernelStat> stats;
  for (size_t k = 0; k < keep; ++k) {
    stats.push_back({std::string(timeline.strings.view(ids[k])), count[ids[k]], total[ids[k]]});
  }
  return stats;
}

}  // namespace

Summary summarize(const Analysis& analysis, size_t top_n) {
  Summary summary;
  const Timeline& timeline = *analysis.timeline;
  const Events& events = timeline.events;
  summary.path = timeline.path;
  summary.rank = timeline.rank;
  summary.load = timeline.stats;
  for (int32_t id : analysis.devices) {
    if (const DeviceInfo* info = timeline.device(id)) {
      summary.devices.push_back(*info);
    } else {
      DeviceInfo unknown;
      unknown.id = id;
      summary.devices.push_back(unknown);
    }
  }

  summary.step_count = analysis.steps.size();
  summary.step_source = analysis.step_source;
  summary.step_note = analysis.step_note;
  if (analysis.steps.empty()) return summary;

  // Every figure below describes the steady-state steps (warm-up and a cut-short last step left out): the
  // same steps the rules divide by, so numerators and denominators match.
  summary.warmup_steps = analysis.warmup_step_count();
  summary.warmup_note = analysis.warmup_note;
  summary.steady_state_note = analysis.steady_state_note;
  summary.last_step_partial = analysis.steps.back().partial;
  summary.partial_note = analysis.partial_note;
  std::vector<int64_t> periods;
  std::vector<Interval> windows;  // the steady steps' ledger windows: disjoint, in time order
  int64_t span_start = std::numeric_limits<int64_t>::max();
  int64_t span_end = std::numeric_limits<int64_t>::min();
  for (uint32_t s = 0; s < analysis.steps.size(); ++s) {
    if (!analysis.is_steady(s)) continue;
    periods.push_back(analysis.steps[s].period_ns);
    windows.push_back(analysis.step_windows[s]);
    span_start = std::min(span_start, analysis.step_windows[s].start_ns);
    span_end = std::max(span_end, analysis.step_windows[s].end_ns);
  }
  summary.steady_steps = periods.size();
  if (periods.empty()) return summary;
  std::sort(periods.begin(), periods.end());
  summary.median_step_ms = analysis.median_step_ns() / kNsPerMs;
  summary.step_period_ms = analysis.step_period_ns() / kNsPerMs;
  // p90 by nearest rank: the smallest period with at least 90% of the steps at or below it.
  size_t rank90 = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(periods.size())));
  summary.p90_step_ms = static_cast<double>(periods[std::max<size_t>(rank90, 1) - 1]) / kNsPerMs;
  int64_t span = 0;
  for (const Interval& w : windows) span += w.end_ns - w.start_ns;
  summary.span_ms = static_cast<double>(span) / kNsPerMs;
  auto covered_in_windows = [&windows](const std::vector<Interval>& merged) {
    int64_t total = 0;
    for (const Interval& w : windows) total += detail::covered_ns(merged, w.start_ns, w.end_ns);
    return total;
  };

  // GPU busy share: one union over all devices.
  std::vector<Interval> all_busy;
  for (const auto& device : analysis.busy) all_busy.insert(all_busy.end(), device.begin(), device.end());
  detail::merge_intervals(all_busy);
  if (span > 0) {
    summary.gpu_busy_pct = 100.0 * static_cast<double>(covered_in_windows(all_busy)) / static_cast<double>(span);
  }

  // Breakdown per device, each busy moment counted once: compute, then communication, copies, memsets.
  enum Category { kCompute, kCommunication, kMemcpy, kMemset, kCategories };
  const size_t device_count = analysis.devices.size();
  std::vector<std::vector<std::vector<Interval>>> by_category(device_count,
                                                              std::vector<std::vector<Interval>>(kCategories));
  std::vector<int64_t> kernel_count(timeline.strings.size(), 0), kernel_total(timeline.strings.size(), 0);
  std::vector<int64_t> op_count(timeline.strings.size(), 0), op_total(timeline.strings.size(), 0);
  int64_t kernels = 0, tiny = 0;
  for (EventIndex i = 0; i < events.size(); ++i) {
    const EventKind kind = events.kind[i];
    if (is_gpu_activity(kind)) {
      const Track& track = timeline.tracks[events.track[i]];
      auto it = std::lower_bound(analysis.devices.begin(), analysis.devices.end(), track.device);
      if (it != analysis.devices.end() && *it == track.device) {
        Category category = kind == EventKind::Memcpy   ? kMemcpy
                            : kind == EventKind::Memset ? kMemset
                            : analysis.family_of(i) == KernelFamily::Communication ? kCommunication
                                                                                   : kCompute;
        by_category[static_cast<size_t>(it - analysis.devices.begin())][category].push_back(
            {events.ts_ns[i], events.end_ns(i)});
      }
    }
    if (!analysis.is_steady(analysis.event_step[i])) continue;
    if (kind == EventKind::Kernel) {
      ++kernels;
      if (events.dur_ns[i] < kTinyKernelNs) ++tiny;
      ++kernel_count[events.name[i]];
      summary.family_ms_per_step[static_cast<size_t>(analysis.family_of(i))] += static_cast<double>(events.dur_ns[i]);
      kernel_total[events.name[i]] += events.dur_ns[i];
    } else if (kind == EventKind::CpuOp && !timeline.name(i).starts_with("ProfilerStep#")) {
      ++op_count[events.name[i]];
      op_total[events.name[i]] += events.dur_ns[i];
    }
  }
  int64_t totals[kCategories] = {0, 0, 0, 0};
  int64_t idle_total = 0;
  const double steps = static_cast<double>(summary.steady_steps);
  const size_t step_count = std::min(analysis.steps.size(), analysis.step_windows.size());
  std::vector<std::array<int64_t, kCategories>> step_totals(step_count, {0, 0, 0, 0});
  for (size_t d = 0; d < device_count; ++d) {
    std::vector<Interval> cumulative;
    int64_t covered_before = 0;
    int64_t own[kCategories] = {0, 0, 0, 0};
    std::vector<int64_t> step_covered_before(step_count, 0);
    for (int c = 0; c < kCategories; ++c) {
      auto& intervals = by_category[d][static_cast<size_t>(c)];
      cumulative.insert(cumulative.end(), intervals.begin(), intervals.end());
      detail::merge_intervals(cumulative);
      int64_t covered = covered_in_windows(cumulative);
      own[c] = covered - covered_before;
      totals[c] += own[c];
      covered_before = covered;
      for (size_t s = 0; s < step_count; ++s) {
        const Interval& w = analysis.step_windows[s];
        int64_t in_step = detail::covered_ns(cumulative, w.start_ns, w.end_ns);
        step_totals[s][static_cast<size_t>(c)] += in_step - step_covered_before[s];
        step_covered_before[s] = in_step;
      }
    }
    idle_total += span - covered_before;
    DeviceShare share;
    share.device = analysis.devices[d];
    share.compute_ms = static_cast<double>(own[kCompute]) / kNsPerMs / steps;
    share.communication_ms = static_cast<double>(own[kCommunication]) / kNsPerMs / steps;
    share.copy_ms = static_cast<double>(own[kMemcpy] + own[kMemset]) / kNsPerMs / steps;
    share.idle_ms = static_cast<double>(span - covered_before) / kNsPerMs / steps;
    if (span > 0) {
      const double denominator = static_cast<double>(span) / 100.0;
      share.compute_busy_pct = static_cast<double>(own[kCompute]) / denominator;
      share.communication_pct = static_cast<double>(own[kCommunication]) / denominator;
      share.copy_pct = static_cast<double>(own[kMemcpy] + own[kMemset]) / denominator;
      share.idle_pct = static_cast<double>(span - covered_before) / denominator;
    }
    summary.device_shares.push_back(share);
  }
  for (size_t s = 0; s < step_count; ++s) {
    StepBreakdown step;
    step.number = analysis.steps[s].number;
    step.period_ms = static_cast<double>(analysis.steps[s].period_ns) / kNsPerMs;
    step.steady = analysis.is_steady(static_cast<uint32_t>(s));
    step.compute_ms = static_cast<double>(step_totals[s][kCompute]) / kNsPerMs;
    step.communication_ms = static_cast<double>(step_totals[s][kCommunication]) / kNsPerMs;
    step.copy_ms = static_cast<double>(step_totals[s][kMemcpy] + step_totals[s][kMemset]) / kNsPerMs;
    summary.steps.push_back(step);
  }
  for (const IdleGap& gap : analysis.idle) {
    if (gap.step < summary.steps.size()) {
      summary.steps[gap.step].idle_ms[static_cast<int>(gap.cause)] += static_cast<double>(gap.duration_ns()) / kNsPerMs;
    }
  }
  summary.compute_ms = static_cast<double>(totals[kCompute]) / kNsPerMs;
  summary.communication_ms = static_cast<double>(totals[kCommunication]) / kNsPerMs;
  summary.memcpy_ms = static_cast<double>(totals[kMemcpy]) / kNsPerMs;
  summary.memset_ms = static_cast<double>(totals[kMemset]) / kNsPerMs;
  summary.idle_ms = static_cast<double>(idle_total) / kNsPerMs;
  // Shares of the steady steps' time per device, averaged over devices: a waiting communication kernel
  // is not compute, so a rank stuck in all-reduce no longer looks busy.
  if (span > 0 && device_count > 0) {
    const double denominator = static_cast<double>(span) * static_cast<double>(device_count) / 100.0;
    summary.compute_busy_pct = static_cast<double>(totals[kCompute]) / denominator;
    summary.communication_pct = static_cast<double>(totals[kCommunication]) / denominator;
    summary.copy_pct = static_cast<double>(totals[kMemcpy] + totals[kMemset]) / denominator;
    summary.idle_pct = static_cast<double>(idle_total) / denominator;
  }

  for (double& ms : summary.family_ms_per_step) ms = ms / kNsPerMs / steps;
  summary.kernel_count = kernels;
  summary.kernels_per_step = static_cast<double>(kernels) / static_cast<double>(summary.steady_steps);
  summary.tiny_kernel_pct = kernels > 0 ? 100.0 * static_cast<double>(tiny) / static_cast<double>(kernels) : 0.0;
  summary.top_kernels = top_by_time(timeline, kernel_count, kernel_total, top_n);
  summary.top_cpu_ops = top_by_time(timeline, op_count, op_total, top_n);

  for (IdleCause cause : kIdleCauses) {
    int64_t ns = 0;
    for (const IdleGap& gap : analysis.idle) {
      if (gap.cause == cause && analysis.is_steady(gap.step)) ns += gap.duration_ns();
    }
    if (ns > 0) summary.idle_causes.push_back({cause, static_cast<double>(ns) / kNsPerMs});
  }
  std::stable_sort(summary.idle_causes.begin(), summary.idle_causes.end(),
                   [](const IdleShare& a, const IdleShare& b) { return a.ms > b.ms; });
  return summary;
}

std::vector<std::string> unexplained_idle_notes(const Summary& summary) {
  std::vector<std::string> notes;
  if (summary.steady_steps == 0 || summary.step_period_ms <= 0 || summary.devices.empty()) return notes;
  if (!summary.steady_state_note.empty()) {
    notes.push_back("no steady step: " + summary.steady_state_note +
                    "; no rule ran (see the coverage line)");
  }
  for (const IdleShare& share : summary.idle_causes) {
    // Per step and device: the ledger sums the devices.
    const double ms = share.ms / static_cast<double>(summary.steady_steps) / static_cast<double>(summary.devices.size());
    const double pct = 100.0 * ms / summary.step_period_ms;
    if (pct < 5.0) continue;
    char figure[96];
    std::snprintf(figure, sizeof figure, "%.3g ms per step (%.0f%% of the step)", ms, pct);
    static constexpr std::pair<IdleCause, const char*> kWhy[] = {
        {IdleCause::Untraced,
         " while the launching thread records no event: the trace does not say what the host did (Python between "
         "ops, or events the file leaves out); no finding counts it as a saving. Record with with_stack=True to "
         "see it"},
        {IdleCause::GraphCapture,
         " while the host records CUDA/HIP graphs (stream capture): this part of the trace is a capture, not the "
         "workload; profile the graph replays to check them"},
        {IdleCause::ExternalWait,
         " with work queued or awaited that the trace does not show (the host blocks in a synchronising call "
         "behind it): work queued before profiling, another process or an untraced stream; no finding counts it "
         "as a saving"},
        {IdleCause::WarmUp,
         " while the host does one-off work (first launches loading kernel code, driver allocations, context or "
         "stream creation, autotuning): the profiled steps include warm-up; profile later iterations "
         "(torch.profiler.schedule(wait=1, warmup=1, active=3))"},
    };
    for (const auto& [cause, why] : kWhy) {
      if (cause == share.cause) notes.push_back(std::string("the GPU idles ") + figure + why);
    }
  }
  return notes;
}

std::optional<std::string> missing_gpu_activity_note(const Timeline& timeline) {
  const Events& events = timeline.events;
  // GPU tracks first: a trace with GPU activity answers at its first kernel or copy, without a pass over
  // the host's events (which Kineto writes before the GPU's).
  for (size_t t = 0; t < timeline.tracks.size(); ++t) {
    if (timeline.tracks[t].kind != TrackKind::Gpu) continue;
    for (EventIndex e : timeline.track_events[t]) {
      if (is_gpu_activity(events.kind[e])) return std::nullopt;
    }
  }
  // Calls that queue GPU work (kernel and graph launches, async copies and memsets) and calls the host
  // waits in (synchronizes, synchronous copies), as the analysis classes them.
  const detail::NameClasses names = detail::classify_names(timeline.strings);
  size_t launches = 0, profiler_ranges = 0, gpu_only_ops = 0;
  StringId gpu_only_op = 0;
  int64_t sync_ns = 0;
  for (EventIndex i = 0; i < events.size(); ++i) {
    const EventKind kind = events.kind[i];
    if (is_gpu_activity(kind)) return std::nullopt;
    if (kind == EventKind::Other && timeline.strings.view(events.category[i]) == "cuda_profiler_range") {
      ++profiler_ranges;
    }
    if (kind == EventKind::CpuOp) {
      // cuDNN and MIOpen ops exist only on a GPU (the legacy autograd profiler records them, and no GPU
      // activity, without use_cuda=True). Not their predicates: `aten::cudnn_is_acceptable` asks whether
      // cuDNN could take a tensor, and every CPU LSTM or convolution asks it.
      const std::string_view name = timeline.strings.view(events.name[i]);
      if ((name.starts_with("aten::cudnn_") || name.starts_with("aten::_cudnn_") ||
           name.starts_with("aten::miopen_") || name.starts_with("aten::_miopen_")) &&
          name.find("_is_") == std::string_view::npos) {
        if (gpu_only_ops++ == 0) gpu_only_op = events.name[i];
      }
    }
    if (kind != EventKind::Runtime && kind != EventKind::Driver) continue;
    if (names.has(timeline, i, detail::kLaunchCall)) ++launches;
    if (names.has(timeline, i, detail::kSyncCall)) sync_ns += events.dur_ns[i];
  }
  constexpr const char* kNotRecorded =
      "the GPU's activity was not recorded (ProfilerActivity.CUDA left out of `activities`, or the profiler could "
      "not start CUPTI/roctracer or lost its buffers)";
  constexpr const char* kNotRun = "; the rules that need GPU activity did not run (see the coverage line)";
  char text[256];
  if (profiler_ranges > 0) {
    // Kineto's CUPTI range profiler (experimental_config with profiler_metrics) records counter values per
    // kernel range.
    std::snprintf(text, sizeof text,
                  "the trace holds %zu CUPTI range-profiler range%s (performance counters per kernel) and no "
                  "kernel, copy or memset: the GPU's activity was not recorded beside the counters",
                  profiler_ranges, profiler_ranges == 1 ? "" : "s");
    return std::string(text) + kNotRun;
  }
  if (launches > 0) {
    std::snprintf(text, sizeof text,
                  "the host queued GPU work %zu time%s (kernel launches, copies, memsets) but the trace holds no "
                  "kernel, copy or memset: ",
                  launches, launches == 1 ? "" : "s");
    return std::string(text) + kNotRecorded + kNotRun;
  }
  if (gpu_only_ops > 0) {
    std::snprintf(text, sizeof text,
                  "the program ran %zu cuDNN/MIOpen op%s (such as %.60s), which run only on a GPU, but the trace "
                  "holds no kernel, copy or memset: ",
                  gpu_only_ops, gpu_only_ops == 1 ? "" : "s", std::string(timeline.strings.view(gpu_only_op)).c_str());
    return std::string(text) +
           "the GPU's activity was not recorded (the legacy autograd profiler without use_cuda=True, "
           "ProfilerActivity.CUDA left out of `activities`, or a profiler that could not start CUPTI/roctracer)" +
           kNotRun;
  }
  if (sync_ns >= 1'000'000 && !timeline.devices.empty()) {
    std::snprintf(text, sizeof text,
                  "the host waited %.1f ms in synchronising calls on the %zu GPU%s the trace lists, which holds no "
                  "kernel, copy or memset: ",
                  static_cast<double>(sync_ns) / 1e6, timeline.devices.size(), timeline.devices.size() == 1 ? "" : "s");
    return std::string(text) + "the work was queued before profiling started, or " + kNotRecorded + kNotRun;
  }
  return std::nullopt;
}

}  // namespace ptadvise
