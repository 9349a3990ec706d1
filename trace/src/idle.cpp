// The idle ledger: every idle nanosecond inside the step windows is charged once, to what the launching
// host thread was doing at that moment (docs/ANALYSIS.md, "The idle ledger"). Its inputs — busy intervals,
// host pieces, blocking calls, capture stretches — are in busy.cpp and host_pieces.cpp.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "host_pieces.h"
#include "parallel.h"
#include "ptadvise/io.h"

namespace ptadvise::detail {

namespace {

enum class PieceKind { Sync, DataLoader, OneOff, Launch, Work, Untraced };

struct Classified {
  PieceKind kind;
  EventIndex culprit;
  EventIndex innermost;
  EventIndex sync = kNone;  // the blocking call, for PieceKind::Sync
};

// A blocking call with nothing of the trace to wait for returns in microseconds; one that blocks longer
// while no traced GPU work completes waits for work the trace does not show.
constexpr int64_t kExternalWaitMinNs = 1'000'000;
// GPU ops start within tens of microseconds of their launch call; one queued longer while the GPU idles
// is held back by something other than the host.
constexpr int64_t kQueuedLatencyNs = 100'000;
// A kernel launch or other non-synchronising runtime call lasts microseconds; one over a millisecond is
// one-off work: loading the kernel's code on its first launch, creating the context or a stream.
constexpr int64_t kOneOffCallNs = 1'000'000;

// What every gap's charge reads and none changes, made once per ledger.
struct LedgerInputs {
  std::unordered_set<EventIndex> blocking;
  bool allocations_recur = false;
  std::vector<uint8_t> launching;           // per event: a launch of GPU work is inside it
  std::vector<std::vector<Interval>> capture;  // per track: its graph-capture stretches, sorted
  // GPU ops by end time, built on first use (only a long blocking call needs them), once for all threads.
  mutable std::once_flag gpu_ends_made;
  mutable std::vector<std::pair<int64_t, EventIndex>> gpu_ends;
};

// Charges gaps to `ledger`; one per thread, each with its own memos, sharing the inputs.
class LedgerBuilder {
 public:
  LedgerBuilder(const Timeline& timeline, const NameClasses& names, const Analysis& analysis,
                const LedgerInputs& inputs)
      : timeline_(timeline), events_(timeline.events), names_(names), analysis_(analysis),
        inputs_(inputs), blocking_(inputs.blocking), allocations_recur_(inputs.allocations_recur),
        launching_(inputs.launching), capture_(inputs.capture) {}

  // Where the gaps charged from now on go.
  void charge_into(std::vector<IdleGap>& ledger) { ledger_ = &ledger; }

  // The ledger entries all builders may make together. Entries are counted in batches: a trace whose
  // ledger would not fit (thousands of GPUs idle through every host event: devices x host events) ends
  // in BudgetExceeded (a std::bad_alloc: one line naming the ledger, exit 2) before the system runs out
  // and kills the process.
  void limit_entries(std::atomic<size_t>& made, size_t limit) {
    made_ = &made;
    limit_ = limit;
  }

  [[noreturn]] void throw_over_budget() const {
    throw BudgetExceeded(timeline_.path + ": the idle ledger needs more than " +
                         format_bytes(limit_ * sizeof(IdleGap)) + ", a quarter of the memory available (" +
                         std::to_string(analysis_.devices.size()) +
                         " GPUs idle through the host's events); set PTADVISE_MEMORY_LIMIT to change the limit");
  }

  static void make_inputs(const Timeline& timeline, const NameClasses& names, const Analysis& analysis,
                          LedgerInputs& made) {
    made.blocking = blocking_calls(timeline, names);
    made.allocations_recur = allocations_recur(timeline.events, names, analysis);
    made.launching = launching_events(timeline.events);
    made.capture = capture_stretches(timeline, names, made.launching);
  }

  void charge_gap(int32_t device, uint32_t step, int64_t start, int64_t end, EventIndex next_op,
                  EventIndex previous_op) {
    EventIndex host_call = kNone;
    if (next_op != kNone) host_call = events_.launch[next_op];
    if (host_call == kNone && previous_op != kNone) host_call = events_.launch[previous_op];
    uint32_t thread = host_call != kNone ? events_.track[host_call] : analysis_.main_track;

    pieces_.clear();
    if (thread != kNone && thread < timeline_.track_events.size()) {
      sweep_thread(timeline_, thread, start, end, pieces_);
    } else {
      pieces_.push_back({start, end, kNone});
    }
    split_at_captures(thread);
    classified_.clear();
    int64_t launching_ns = 0;
    for (const Piece& piece : pieces_) {
      classified_.push_back(classify(piece.innermost));
      if (classified_.back().kind == PieceKind::Launch) launching_ns += piece.end_ns - piece.start_ns;
    }
    // Mostly inside launch calls: the host cannot queue work as fast as the GPU finishes it.
    const bool launch_bound = 2 * launching_ns > end - start;
    EventIndex launcher = next_op != kNone ? analysis_.cpu_op_of(next_op) : kNone;
    // Where the device's idle began: the end of its last busy interval (a gap cut by a window edge
    // started before `start`).
    const int64_t idle_since = previous_op != kNone ? events_.end_ns(previous_op) : std::numeric_limits<int64_t>::min();
    for (size_t p = 0; p < pieces_.size(); ++p) {
      IdleCause cause = IdleCause::Untraced;
      EventIndex culprit = classified_[p].culprit;
      if (in_capture_[p]) {
        append(device, step, pieces_[p].start_ns, pieces_[p].end_ns, IdleCause::GraphCapture, culprit, false, false);
        continue;
      }
      PieceKind kind = classified_[p].kind;
      if (kind == PieceKind::Sync && waits_for_traced_work(classified_[p].sync) &&
          !held_in_queue(classified_[p].sync, next_op, pieces_[p].end_ns) &&
          !waits_for_gpu(classified_[p].culprit, idle_since)) {
        kind = PieceKind::Work;  // a call that waited for nothing: the host's own time
      }
      switch (kind) {
        case PieceKind::Sync:
          cause = IdleCause::Sync;
          if (!waits_for_traced_work(classified_[p].sync) ||
              held_in_queue(classified_[p].sync, next_op, pieces_[p].end_ns)) {
            cause = IdleCause::ExternalWait;
          }
          break;
        case PieceKind::DataLoader:
          cause = IdleCause::DataLoader;
          break;
        case PieceKind::OneOff:
          cause = IdleCause::WarmUp;
          break;
        case PieceKind::Launch:
        case PieceKind::Work:
        case PieceKind::Untraced:
          if (launch_bound) {
            cause = IdleCause::LaunchBound;
            if (launcher != kNone) culprit = launcher;
          } else {
            cause = classified_[p].kind == PieceKind::Untraced ? IdleCause::Untraced : IdleCause::CpuWork;
          }
          break;
      }
      const bool launching = kind == PieceKind::Launch;
      const bool queues_work = launching || kind == PieceKind::Untraced ||
                               (kind == PieceKind::Work && launches_gpu_work(classified_[p].innermost));
      append(device, step, pieces_[p].start_ns, pieces_[p].end_ns, cause, culprit, launching, queues_work);
    }
  }

 private:
  // True when GPU work the trace shows completes while the call blocks (work it waits for, or its own copy),
  // or when the call is too short to tell. Cached per call.
  bool waits_for_traced_work(EventIndex call) {
    if (call == kNone || events_.dur_ns[call] <= kExternalWaitMinNs) return true;
    std::call_once(inputs_.gpu_ends_made, [this] {
      auto& ends = inputs_.gpu_ends;
      for (EventIndex g = 0; g < events_.size(); ++g) {
        if (is_gpu_activity(events_.kind[g]) && events_.dur_ns[g] > 0) ends.push_back({events_.end_ns(g), g});
      }
      std::sort(ends.begin(), ends.end());
      if (ends.empty()) ends.push_back({std::numeric_limits<int64_t>::min(), kNone});
    });
    const auto& gpu_ends_ = inputs_.gpu_ends;
    auto known = waits_.find(call);
    if (known != waits_.end()) return known->second;
    const int64_t from = events_.ts_ns[call], to = events_.end_ns(call);
    bool waits = false;
    for (auto it = std::upper_bound(gpu_ends_.begin(), gpu_ends_.end(), std::pair<int64_t, EventIndex>{from, kNone});
         it != gpu_ends_.end() && it->first <= to; ++it) {
      if (it->second == kNone) continue;
      waits = true;
      break;
    }
    waits_.emplace(call, waits);
    return waits;
  }

  // A blocking operation (`site`: the op around the blocking call, else the call) idles the GPU only while
  // the host waits for GPU work: work still running when the operation began (the GPU drains while the
  // host waits), or work the operation queued itself (the copy of `.item()` or of a pageable `.to()`: the
  // host waits for its round trip). A synchronize that begins after the device went idle and queued
  // nothing returns as soon as it has checked: the GPU was already waiting for the host, for whatever kept
  // it from launching earlier, and removing the call gives back only the call's own few microseconds.
  bool waits_for_gpu(EventIndex site, int64_t idle_since) const {
    return site != kNone && (events_.ts_ns[site] < idle_since || launching_[site]);
  }

  // The host blocks in `call` while the GPU idles, although the op that ends the gap was queued before the
  // call began (and more than kQueuedLatencyNs before the GPU idle ends): the GPU had work and did not run it,
  // so the host is waiting for the GPU and the GPU for something the trace does not show.
  bool held_in_queue(EventIndex call, EventIndex next_op, int64_t at) const {
    if (call == kNone || next_op == kNone || events_.launch[next_op] == kNone) return false;
    // Only calls that synchronise by themselves, and a kernel held back: a copy from pageable memory (and
    // an asynchronous copy that blocks) waits for the host to stage it, and that is the host's doing.
    if ((names_.by_name[events_.name[call]] & kSyncCall) == 0 || events_.kind[next_op] != EventKind::Kernel) {
      return false;
    }
    const EventIndex launch = events_.launch[next_op];
    return launch != call && events_.end_ns(launch) <= events_.ts_ns[call] &&
           events_.end_ns(launch) + kQueuedLatencyNs <= at;
  }

  // Code loading (module loads, a first launch), context or stream creation: a runtime call over 1 ms
  // that does not copy (pageable staging takes the host's time every step). A driver allocation is the
  // caching allocator growing to its working set, once, unless allocations recur from step to step (the
  // allocator churns: allocator-churn's).
  bool is_one_off_call(EventIndex e, uint16_t classes) const {
    if (classes & kModuleLoad) return true;
    if (classes & kAllocation) return !allocations_recur_;
    if (classes & kAsyncMemcpy) return false;
    return events_.dur_ns[e] > kOneOffCallNs;
  }

  // Driver allocations recur when they happen in at least half of the steady steps, and in two at least
  // (one step cannot show that anything recurs), and when the steady steps also free memory. A program
  // that allocates in every step and never frees grows: the caching allocator reaching its working set,
  // a workspace for each new stream or handle. Churn that a fix removes (empty_cache, allocation retries
  // under memory pressure) gives back what it takes.
  static bool allocations_recur(const Events& events_, const NameClasses& names_, const Analysis& analysis_) {
    const std::vector<Step>& steps = analysis_.steps;
    std::vector<uint8_t> allocates(steps.size(), 0);
    std::vector<uint8_t> releases(steps.size(), 0);
    for (EventIndex e = 0; e < events_.size(); ++e) {
      const EventKind kind = events_.kind[e];
      if (kind != EventKind::Runtime && kind != EventKind::Driver) continue;
      const uint16_t classes = names_.by_name[events_.name[e]];
      if ((classes & kAllocation) == 0) continue;
      const uint32_t s = analysis_.event_step[e];
      if (s >= steps.size()) continue;
      allocates[s] = 1;
      if (classes & kRelease) releases[s] = 1;
    }
    size_t steady = 0, with_allocations = 0, with_releases = 0;
    for (size_t s = 0; s < steps.size(); ++s) {
      if (steps[s].warmup || steps[s].partial) continue;
      ++steady;
      with_allocations += allocates[s];
      with_releases += releases[s];
    }
    return with_allocations >= 2 && 2 * with_allocations >= steady && with_releases > 0;
  }

  // Splits the swept pieces of `thread` where its capture stretches begin and end; in_capture_ says which
  // parts lie inside one.
  void split_at_captures(uint32_t thread) {
    in_capture_.assign(pieces_.size(), 0);
    if (thread >= capture_.size() || capture_[thread].empty()) return;
    const std::vector<Interval>& stretches = capture_[thread];
    split_.clear();
    split_flags_.clear();
    for (const Piece& piece : pieces_) {
      int64_t now = piece.start_ns;
      auto it = std::lower_bound(stretches.begin(), stretches.end(), now,
                                 [](const Interval& s, int64_t value) { return s.end_ns <= value; });
      for (; it != stretches.end() && it->start_ns < piece.end_ns && now < piece.end_ns; ++it) {
        if (it->start_ns > now) {
          split_.push_back({now, it->start_ns, piece.innermost});
          split_flags_.push_back(0);
          now = it->start_ns;
        }
        const int64_t end = std::min(it->end_ns, piece.end_ns);
        split_.push_back({now, end, piece.innermost});
        split_flags_.push_back(1);
        now = end;
      }
      if (now < piece.end_ns) {
        split_.push_back({now, piece.end_ns, piece.innermost});
        split_flags_.push_back(0);
      }
    }
    pieces_.swap(split_);
    in_capture_.swap(split_flags_);
  }

  // Every event with a launch of GPU work inside it (the launch call and all that encloses it).
  static std::vector<uint8_t> launching_events(const Events& events) {
    std::vector<uint8_t> launching(events.size(), 0);
    for (EventIndex e = 0; e < events.size(); ++e) {
      if (!is_gpu_activity(events.kind[e])) continue;
      for (EventIndex up = events.launch[e]; up != kNone && !launching[up]; up = events.parent[up]) launching[up] = 1;
    }
    return launching;
  }

  // Host work on the way to the next launch: the innermost event running has a launch inside it (an op
  // that launches, Python glue directly in a frame that launches). Only the innermost event counts, so a
  // frame enclosing the whole loop does not make unrelated work below it (preprocessing) count.
  bool launches_gpu_work(EventIndex innermost) const {
    return innermost != kNone && innermost < launching_.size() && launching_[innermost];
  }

  // The innermost event of each role on the chain from an event up to its outermost parent.
  struct Chain {
    EventIndex sync = kNone, loader = kNone, one_off = kNone, launch = kNone, op = kNone, python = kNone, note = kNone,
               other_call = kNone;
  };

  // Computed once per event from its parent's chain: walking the whole chain for every piece was quadratic
  // in the nesting depth (200k nested ops took minutes).
  Chain chain_of(EventIndex innermost) const {  // by value: a later call may grow chains_
    if (chain_slot_.empty()) chain_slot_.assign(events_.size(), kNoChain);
    if (chain_slot_[innermost] != kNoChain) return chains_[chain_slot_[innermost]];
    std::vector<EventIndex> path;  // innermost first, up to the first event already known
    Chain chain;
    for (EventIndex e = innermost; e != kNone; e = events_.parent[e]) {
      if (chain_slot_[e] != kNoChain) {
        chain = chains_[chain_slot_[e]];
        break;
      }
      path.push_back(e);
    }
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const EventIndex e = *it;
      const EventKind kind = events_.kind[e];
      const uint16_t classes = names_.by_name[events_.name[e]];
      if (kind == EventKind::Runtime || kind == EventKind::Driver) {
        if ((classes & kSyncCall) || blocking_.count(e)) {
          chain.sync = e;
        } else if (is_one_off_call(e, classes)) {
          chain.one_off = e;
        } else if (classes & kLaunchCall) {
          chain.launch = e;
        } else {
          chain.other_call = e;
        }
      } else if (kind == EventKind::CpuOp || kind == EventKind::UserAnnotation) {
        if (classes & kDataLoader) {
          chain.loader = e;
        } else if (classes & kStepMarker) {
          // the step itself says nothing about what ran inside it
        } else if (kind == EventKind::CpuOp) {
          chain.op = e;
        } else {
          chain.note = e;
        }
      } else if (kind == EventKind::PythonFunction) {
        chain.python = e;
      }
      chain_slot_[e] = static_cast<uint32_t>(chains_.size());
      chains_.push_back(chain);
    }
    return chains_[chain_slot_[innermost]];
  }

  Classified classify(EventIndex innermost) const {
    if (innermost == kNone) return {PieceKind::Untraced, kNone, kNone};
    const Chain chain = chain_of(innermost);
    const EventIndex sync = chain.sync, loader = chain.loader, launch = chain.launch, op = chain.op,
                     python = chain.python, note = chain.note, other_call = chain.other_call;
    if (sync != kNone) return {PieceKind::Sync, op != kNone ? op : sync, innermost, sync};
    if (loader != kNone) return {PieceKind::DataLoader, loader, innermost};
    if (chain.one_off != kNone) return {PieceKind::OneOff, op != kNone ? op : chain.one_off, innermost};
    if (launch != kNone) return {PieceKind::Launch, op != kNone ? op : launch, innermost};
    for (EventIndex culprit : {op, python, note, other_call}) {
      if (culprit != kNone) return {PieceKind::Work, culprit, innermost};
    }
    return {PieceKind::Untraced, kNone, innermost};
  }

  void append(int32_t device, uint32_t step, int64_t start, int64_t end, IdleCause cause, EventIndex culprit,
              bool launching, bool queues_work) {
    auto& ledger = *ledger_;
    if (!ledger.empty()) {
      IdleGap& last = ledger.back();
      if (last.device == device && last.step == step && last.end_ns == start && last.cause == cause &&
          last.culprit == culprit && last.launching == launching && last.queues_work == queues_work) {
        last.end_ns = end;
        return;
      }
    }
    IdleGap gap;
    gap.device = device;
    gap.step = step;
    gap.start_ns = start;
    gap.end_ns = end;
    gap.cause = cause;
    gap.culprit = culprit;
    gap.launching = launching;
    gap.queues_work = queues_work;
    if (++unsaid_ == kBatch) {
      unsaid_ = 0;
      if (made_ != nullptr && made_->fetch_add(kBatch) + kBatch > limit_) throw_over_budget();
    }
    ledger.push_back(gap);
  }

  const Timeline& timeline_;
  const Events& events_;
  const NameClasses& names_;
  const Analysis& analysis_;
  const LedgerInputs& inputs_;
  const std::unordered_set<EventIndex>& blocking_;
  const bool allocations_recur_;
  const std::vector<uint8_t>& launching_;
  const std::vector<std::vector<Interval>>& capture_;
  std::vector<IdleGap>* ledger_ = nullptr;
  static constexpr size_t kBatch = 4096;
  std::atomic<size_t>* made_ = nullptr;  // entries counted by every builder
  size_t limit_ = std::numeric_limits<size_t>::max();
  size_t unsaid_ = 0;  // entries this builder made since it last counted
  std::vector<Piece> pieces_;
  std::unordered_map<EventIndex, bool> waits_;            // per blocking call: waits_for_traced_work
  std::vector<uint8_t> in_capture_;                       // per piece: inside a capture stretch
  std::vector<Piece> split_;
  std::vector<uint8_t> split_flags_;
  // Filled on first use, for the events some gap's walk reaches only: a slot per event (4 bytes) rather
  // than a Chain per event keeps the memory touched small on big traces.
  static constexpr uint32_t kNoChain = std::numeric_limits<uint32_t>::max();
  mutable std::vector<uint32_t> chain_slot_;
  mutable std::vector<Chain> chains_;
  std::vector<Classified> classified_;
};

}  // namespace

void build_idle_ledger(const Timeline& timeline, const NameClasses& names, Analysis& analysis,
                       const std::vector<DeviceBusy>& devices, unsigned threads) {
  analysis.idle.clear();
  if (analysis.devices.empty() || analysis.steps.empty()) return;
  LedgerInputs inputs;
  LedgerBuilder::make_inputs(timeline, names, analysis, inputs);
  // The gaps of a device in a run of steps are charged apart from every other run's: a gap never spans two
  // step windows, and pieces are only joined within one step. Runs are shared out between threads, each
  // charging into its own list, and the lists follow each other in (device, step) order: the ledger is the
  // same on any number of threads.
  constexpr uint32_t kStepsPerRun = 4;
  const auto windows = static_cast<uint32_t>(analysis.step_windows.size());
  struct Run {
    size_t device;
    uint32_t first_step, end_step;
    std::vector<IdleGap> gaps;
  };
  std::vector<Run> runs;
  for (size_t d = 0; d < devices.size(); ++d) {
    for (uint32_t s = 0; s < windows; s += kStepsPerRun) runs.push_back({d, s, std::min(windows, s + kStepsPerRun), {}});
  }
  std::atomic<size_t> next_run{0};
  // A quarter of the memory still available for the entries: the lists grow by doubling, and are copied
  // into one at the end.
  const size_t entry_limit = items_in_memory_share(sizeof(IdleGap));
  std::atomic<size_t> entries_made{0};
  auto charge_runs = [&] {
    LedgerBuilder builder(timeline, names, analysis, inputs);
    builder.limit_entries(entries_made, entry_limit);
    for (size_t r = next_run++; r < runs.size(); r = next_run++) {
      Run& run = runs[r];
      builder.charge_into(run.gaps);
      const DeviceBusy& device = devices[run.device];
      const size_t busy_count = device.busy.size();
      for (uint32_t s = run.first_step; s < run.end_step; ++s) {
        const Interval window = analysis.step_windows[s];
        if (window.end_ns <= window.start_ns) continue;
        // Busy intervals are merged, so their ends ascend: the first one still running at the window's start.
        size_t next = static_cast<size_t>(
            std::partition_point(device.busy.begin(), device.busy.end(),
                                 [&](const Interval& busy) { return busy.end_ns <= window.start_ns; }) -
            device.busy.begin());
        int64_t now = window.start_ns;
        while (now < window.end_ns) {
          if (next < busy_count && device.busy[next].start_ns <= now) {
            now = std::max(now, device.busy[next].end_ns);
            ++next;
            continue;
          }
          int64_t gap_end = next < busy_count ? std::min(device.busy[next].start_ns, window.end_ns) : window.end_ns;
          EventIndex next_op = next < busy_count ? device.first_op[next] : kNone;
          EventIndex previous_op = next > 0 ? device.last_op[next - 1] : kNone;
          builder.charge_gap(analysis.devices[run.device], s, now, gap_end, next_op, previous_op);
          now = gap_end;
        }
      }
    }
  };
  run_on_threads(std::min<size_t>(threads, runs.size()), charge_runs);
  if (runs.size() == 1) {
    analysis.idle = std::move(runs.front().gaps);
  } else {
    size_t total = 0;
    for (const Run& run : runs) total += run.gaps.size();
    analysis.idle.reserve(total);
    for (Run& run : runs) {
      analysis.idle.insert(analysis.idle.end(), run.gaps.begin(), run.gaps.end());
      std::vector<IdleGap>().swap(run.gaps);  // freed now: what the analysis allocates next reuses it
    }
  }
  judge_steady_state(analysis);
}

// One-off idle (warm-up, graph capture) against the steady steps' time on every active device: at half
// or more, the steps are one-off work and what they cost says nothing about the next iteration.
void judge_steady_state(Analysis& analysis) {
  int64_t one_off_ns = 0;
  for (const IdleGap& gap : analysis.idle) {
    if (gap.step >= analysis.steps.size() || !analysis.is_steady(gap.step)) continue;
    if (gap.cause == IdleCause::WarmUp || gap.cause == IdleCause::GraphCapture) one_off_ns += gap.duration_ns();
  }
  double steps_ns = 0;
  for (uint32_t s = 0; s < analysis.steps.size(); ++s) {
    if (analysis.is_steady(s)) steps_ns += static_cast<double>(analysis.steps[s].period_ns);
  }
  steps_ns *= static_cast<double>(analysis.devices.size());
  if (steps_ns <= 0 || 2.0 * static_cast<double>(one_off_ns) < steps_ns) return;
  analysis.steady_state = false;
  char note[200];
  std::snprintf(note, sizeof note,
                "one-off work fills the profiled steps: the GPU idles %.0f%% of them while the host warms up "
                "(first launches, allocations, context creation) or records CUDA graphs",
                100.0 * static_cast<double>(one_off_ns) / steps_ns);
  analysis.steady_state_note = note;
}

}  // namespace ptadvise::detail
