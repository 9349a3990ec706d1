// The in-memory timeline of one trace (one process / rank): columnar events with interned strings.
// Built by load_trace() (loader.h); read by analyses, rules and the summary. Knows nothing of rules.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ptadvise {

using StringId = uint32_t;
using EventIndex = uint32_t;
inline constexpr uint32_t kNone = 0xFFFFFFFFu;

// Times are integer nanoseconds; reports give milliseconds.
inline constexpr double kNsPerMs = 1e6;

// One pool per timeline; ids are dense and stable, id 0 is the empty string.
class StringPool {
 public:
  StringPool();
  // The views point into `storage_`: a copy rebuilds them for its own storage, and moves keep the
  // strings in place (noexcept, so std::vector<Timeline> moves rather than copies when it grows).
  StringPool(const StringPool& other);
  StringPool& operator=(const StringPool& other);
  StringPool(StringPool&&) noexcept = default;
  StringPool& operator=(StringPool&&) noexcept = default;
  StringId intern(std::string_view text);
  StringId find(std::string_view text) const;  // kNone when absent; never inserts
  std::string_view view(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }

 private:
  // A list: stable addresses for the views below, and a move that allocates nothing (a deque's does,
  // which under memory pressure ended a noexcept move in std::terminate).
  std::list<std::string> storage_;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StringId> ids_;
};

enum class EventKind : uint8_t {
  CpuOp,           // cpu_op, Operator, legacy events without a category
  UserAnnotation,  // user_annotation: ProfilerStep#N, record_function, NVTX ranges
  PythonFunction,  // python_function
  Runtime,         // cuda_runtime, Runtime (ROCm writes its runtime calls here too)
  Driver,          // cuda_driver
  Kernel,          // kernel, Kernel
  Memcpy,          // gpu_memcpy, Memcpy
  Memset,          // gpu_memset, Memset
  Sync,            // cuda_sync: Stream/Event/Context Sync, Stream Wait Event (never GPU busy time)
  GpuAnnotation,   // gpu_user_annotation (GPU-side mirror of annotations)
  Collective,      // collective_comm (CPU side record of a collective)
  MemoryInstant,   // [memory] instant events with allocator totals
  Instant,         // other instant events (phase "i"/"I")
  Other,           // any other category, kept for completeness
};
std::string_view to_string(EventKind kind);
inline bool is_gpu_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset;
}
inline bool is_gpu_side(EventKind k) {
  return is_gpu_activity(k) || k == EventKind::Sync || k == EventKind::GpuAnnotation;
}

enum class TrackKind : uint8_t { Cpu, Gpu };

// A CPU thread (pid, tid) or a GPU stream (device, stream). pid/tid may be strings in real traces.
struct Track {
  TrackKind kind = TrackKind::Cpu;
  StringId pid_text = 0;  // pid and tid as written ("7", "CPU functions", "Spans")
  StringId tid_text = 0;
  int64_t pid = -1;  // numeric value when the text is an integer, else -1
  int64_t tid = -1;
  int32_t device = -1;  // GPU tracks: device index
  int64_t stream = -1;  // GPU tracks: stream id
  StringId name = 0;    // from thread_name / process_name metadata when present
};

// Structure of arrays; index i across all vectors is event i. Only events with a duration or an instant
// meaning are stored (X, i/I); metadata (M) fills tracks, flows (s/f) fill `flow_correlation`.
struct Events {
  std::vector<int64_t> ts_ns;   // relative to Timeline::origin_ns
  std::vector<int64_t> dur_ns;  // >= 0 (negatives clamped at load)
  std::vector<EventKind> kind;
  std::vector<StringId> name;
  std::vector<StringId> category;  // the raw `cat` text, empty when absent
  std::vector<uint32_t> track;
  std::vector<int64_t> correlation;  // -1 when absent
  std::vector<int64_t> external_id;  // -1 when absent
  // `args` JSON text inside Timeline::buffer; length 0 = no args (or, with kept keys, none of them).
  std::vector<uint64_t> args_offset;
  std::vector<uint32_t> args_length;

  // Filled by the link pass at the end of loading (see links below).
  std::vector<EventIndex> parent;  // innermost enclosing event on the same CPU track (kNone at top level)
  std::vector<EventIndex> launch;  // GPU op -> launching runtime/driver call; runtime call -> first GPU op

  size_t size() const { return ts_ns.size(); }
  int64_t end_ns(EventIndex i) const { return ts_ns[i] + dur_ns[i]; }
};

// The innermost CPU op or user annotation enclosing event `i` on its thread, looking through the Python
// frames `with_stack` writes around everything: kNone when none does, or past 1024 frames (hostile traces
// nest tens of thousands).
inline EventIndex enclosing_op_or_annotation(const Events& events, EventIndex i) {
  constexpr size_t kFramesLookedThrough = 1024;
  EventIndex p = events.parent[i];
  for (size_t walked = 0; p != kNone && events.kind[p] != EventKind::CpuOp && events.kind[p] != EventKind::UserAnnotation;
       ++walked) {
    if (walked == kFramesLookedThrough) return kNone;
    p = events.parent[p];
  }
  return p;
}

// Keys of `args` objects. Sets use std::less<> so that a string_view finds a key without a copy.
using ArgKeySet = std::set<std::string, std::less<>>;

// Every args key the C++ code reads through Timeline::arg_int / arg_double / arg_string with a fixed key
// (analysis, job digests, what-if, rule builtins such as the `bytes` site key). A loader given a set of
// keys to keep (LoadOptions::arg_keys) must be given these too: kept_arg_keys() adds them. A key read by
// the code but missing here fails loudly (Timeline::arg_*) and in the tests, never silently.
inline constexpr std::string_view kCodeArgKeys[] = {
    "Call stack", "Python id", "Python parent id",                                    // analysis
    "Collective name", "Process Group Name", "Seq", "seq", "Group size", "dtype",      // job digests
    "In msg nelems", "Out msg nelems", "Input Dims", "Input type",                    // job digests
    "bytes",                                                                          // copies, rules
    "Device Type", "Total Allocated", "Device Id",                                    // memory (what-if)
    "wait_on_cuda_event_record_corr_id", "wait_on_stream", "cuda_sync_kind", "device", "stream",  // syncs
};

// kCodeArgKeys plus `extra` (the keys the loaded rules read): what a loader must keep for this program.
ArgKeySet kept_arg_keys(const ArgKeySet& extra = {});

struct DeviceInfo {
  int32_t id = -1;
  std::string name;  // may be empty (ROCm)
  std::string vendor;  // "NVIDIA", "AMD", or empty when nothing tells
  int compute_major = -1;  // CUDA compute capability (never ROCm's gfx version); -1 when unknown
  int compute_minor = -1;
  bool compute_inferred = false;  // not in deviceProperties: from the architecture of the device's kernels
  bool properties_borrowed = false;  // id not in deviceProperties: the listed devices' (all one model) details
  int64_t total_global_mem = 0;  // bytes, 0 when unknown
  int num_sms = 0;
};

// Counted, never fatal: what the loader had to skip or repair.
struct LoadStats {
  uint64_t bytes = 0;               // uncompressed JSON bytes
  uint64_t events_seen = 0;         // entries of traceEvents
  uint64_t malformed_events = 0;    // skipped: not an object, missing/ill-typed ph/ts/name, ...
  uint64_t negative_durations = 0;  // clamped to 0
  uint64_t unknown_phases = 0;      // phases we do not use (C counters, b/e async, B/E, ...)
  uint64_t begin_end_events = 0;    // of those, B/E duration events: time the results do not hold
  uint64_t unknown_category_events = 0;  // kept as EventKind::Other: a category no profiler version writes
  uint64_t truncated_bytes = 0;     // bytes after the last complete event of a cut file
  uint64_t recovered_errors = 0;    // JSON syntax errors skipped by resynchronising at the next event
  uint64_t lost_bytes = 0;          // bytes of the event list skipped because of syntax errors
  // A .json.gz damaged part way (not cut short): what the compressed bytes after the damage would have
  // inflated to, estimated at the ratio of the part that inflated. Not in `bytes`.
  uint64_t unread_bytes = 0;
  std::vector<std::string> warnings;  // one line each, already phrased for the user
};

struct Timeline {
  std::string path;  // file it came from
  std::string format;  // "kineto", "kineto-array" (2020 bare array), "legacy" (pre-Kineto export)
  // Owns the bytes the args views point into: the file's JSON, or, when the loader was given keys to keep
  // (LoadOptions::arg_keys), a compact JSON object per event with only those keys. Type-erased so users
  // need not include simdjson.
  std::shared_ptr<const void> buffer_owner;
  const char* buffer = nullptr;
  size_t buffer_size = 0;

  StringPool strings;
  Events events;
  std::vector<Track> tracks;
  std::vector<DeviceInfo> devices;
  std::optional<int> rank;  // distributedInfo.rank, else from the file name
  int world_size = 1;
  bool rank_from_trace = false;  // the rank came from distributedInfo (not from the file name)
  std::string backend;           // distributedInfo.backend ("nccl", "gloo", ...), empty when absent
  int64_t origin_ns = 0;  // absolute epoch ns of ts_ns == 0
  // ts_ns == 0 in the file's own time base (ns, as written, without baseTimeNanoseconds): what viewers
  // such as Perfetto place events by.
  int64_t file_origin_ns = 0;
  std::vector<std::vector<EventIndex>> track_events;  // per track, sorted by (ts asc, dur desc)
  std::vector<int64_t> flow_correlation;  // ac2g / async_cpu_to_gpu flow ids seen (diagnostics)
  LoadStats stats;
  // The args keys kept at load; nullptr when every key was kept. Asking arg_* for a key outside the set
  // is a programming error (the key was not declared to the loader) and throws std::logic_error.
  std::shared_ptr<const ArgKeySet> kept_arg_keys;

  std::string_view name(EventIndex i) const { return strings.view(events.name[i]); }
  std::string_view args_json(EventIndex i) const {
    return {buffer + events.args_offset[i], events.args_length[i]};
  }
  const DeviceInfo* device(int32_t id) const;

  // Lazily parsed args (the whole object, or only the kept keys). Numbers written as strings are accepted where numbers are asked for and
  // the reverse; nested values come back as their raw JSON text from arg_string.
  std::optional<int64_t> arg_int(EventIndex i, std::string_view key) const;
  std::optional<double> arg_double(EventIndex i, std::string_view key) const;
  std::optional<std::string> arg_string(EventIndex i, std::string_view key) const;
};

}  // namespace ptadvise
