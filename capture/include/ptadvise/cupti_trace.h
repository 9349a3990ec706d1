// From CUPTI activity records to a Kineto-compatible JSON trace. Plain code over the record structs of
// the CUDA 13 CUPTI headers: nothing here calls CUPTI, so all of it runs (and is tested) without a GPU.
// The injected library (src/inject/) feeds it every record its buffer callback receives.
// Only available when the project is built with the CUDA toolkit (PTADVISE_CAPTURE).
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ptadvise::capture {

// "HtoD", "DtoH", ... as Kineto writes them (cupti_strings.cpp).
std::string_view memcpy_kind_name(uint32_t copy_kind);
// "Pageable", "Pinned", "Device", ...
std::string_view memory_kind_name(uint32_t memory_kind);
// "Memcpy HtoD (Pageable -> Device)"
std::string memcpy_event_name(uint32_t copy_kind, uint32_t src_kind, uint32_t dst_kind);
// "Memset (Device)"
std::string memset_event_name(uint32_t memory_kind);
// "Stream Sync", "Event Sync", "Context Sync", "Stream Wait Event", or "Unknown Sync".
std::string_view sync_event_name(uint32_t sync_type);
// cuptiGetCallbackName gives "cudaLaunchKernel_v7000" or "cudaMemcpyAsync_ptsz_v7000"; traces show
// "cudaLaunchKernel" / "cudaMemcpyAsync".
std::string api_display_name(std::string_view callback_name);
// Whether a runtime / driver call is worth a trace event. Runtime: everything but per-launch bookkeeping
// (cudaGetDevice, cudaGetLastError, ...). Driver: only calls that enqueue GPU work or wait for it
// (cuLaunchKernel from Triton, cuMemcpy*, cuStreamSynchronize, ...), the rest is the runtime's plumbing.
bool keep_runtime_call(std::string_view display_name);
bool keep_driver_call(std::string_view display_name);
// Calls whose GPU work or wait gets an `ac2g` flow start (launches, copies, memsets, syncs).
bool starts_flow(std::string_view display_name);
// Itanium-demangled kernel name; the input when it is not a mangled C++ name.
std::string demangle(const char* name);

// Who wrote the trace: one trace per process, named with host, pid and rank.
struct ProcessIdentity {
  std::string host;
  int64_t pid = 0;
  std::optional<int> rank;        // RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK
  std::optional<int> local_rank;  // LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID
  int world_size = 1;             // WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS
};
// Reads the identity's rank fields from the environment through `lookup` (getenv in production).
void read_rank_environment(ProcessIdentity& identity,
                           const std::function<const char*(const char*)>& lookup);
// "<host>_<pid>.rank-<R>.pt.trace.json" (".rank-R" only when a rank is known). The loader takes the rank
// from distributedInfo first, from "rank-N" in the name second.
std::string trace_file_name(const ProcessIdentity& identity);

// What the capture knows at the start of the process.
struct TraceHeader {
  ProcessIdentity identity;
  int64_t base_time_ns = 0;  // baseTimeNanoseconds: ts values are µs relative to it
  std::string trace_name;    // traceName (the final path of the file)
  uint32_t cupti_version = 0;
  std::string command;  // the program, for the reader (ptadvise.command)
};

// Counters of what the capture saw, written in the trace's `ptadvise` block.
struct CaptureStats {
  uint64_t records = 0;             // records received from CUPTI
  uint64_t events = 0;              // trace events written (X and i)
  uint64_t dropped_records = 0;     // cuptiActivityGetNumDroppedRecords, summed
  uint64_t refused_buffers = 0;     // buffer requests refused because the pool was spent
  uint64_t filtered_api_calls = 0;  // runtime/driver calls left out as noise
  uint64_t missing_timestamps = 0;  // records with a 0 timestamp ("could not be collected")
  uint64_t unpaired_ranges = 0;     // NVTX range ends without a start, and starts never ended
  uint64_t ignored_records = 0;     // record kinds the writer does not use
  std::map<std::string, uint64_t> overhead_ns;  // CUPTI OVERHEAD records, by overhead kind
  std::map<std::string, uint64_t> overhead_count;
};

struct DeviceProperties {
  uint32_t id = 0;
  std::string name;
  uint64_t total_global_mem = 0;
  uint32_t compute_major = 0;
  uint32_t compute_minor = 0;
  uint32_t num_sms = 0;
  uint32_t warp_size = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t regs_per_block = 0;
  uint32_t shared_mem_per_block = 0;
  uint32_t max_shared_mem_per_sm = 0;
  uint32_t l2_cache_size = 0;
};

using CallbackNameResolver = std::function<std::string(CUpti_CallbackDomain domain, uint32_t cbid)>;

// Streams a trace: the header at construction, one event per useful record as records arrive, the
// metadata (devices, thread names, counters) in finish(). Memory stays bounded by the open NVTX ranges
// and the per-name caches, not by the number of events. Not thread-safe: the caller serialises.
class TraceWriter {
 public:
  TraceWriter(std::ostream& out, TraceHeader header, CallbackNameResolver resolve_callback_name);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // One record exactly as cuptiActivityGetNextRecord yields it; dispatches on record.kind.
  void add_record(const CUpti_Activity& record);
  void add_dropped_records(uint64_t count) { stats_.dropped_records += count; }
  void add_refused_buffer() { ++stats_.refused_buffers; }
  // Closes traceEvents and writes the metadata; call once. `extra_notes` land in ptadvise.notes.
  void finish(const std::vector<std::string>& extra_notes = {});

  const CaptureStats& stats() const { return stats_; }
  bool finished() const { return finished_; }

 private:
  struct OpenRange {
    uint64_t start_ns = 0;
    std::string name;
    std::string domain;
    uint32_t pid = 0;
    uint32_t tid = 0;
  };
  struct ApiName {
    std::string name;
    bool keep = false;
    bool flow = false;
  };
  struct PendingSync {  // a sync whose context has not been mapped to a device yet
    CUpti_ActivitySynchronization2 record;
  };

  void add_kernel(const CUpti_ActivityKernel10& kernel);
  void add_memcpy(const CUpti_ActivityMemcpy6& copy);
  void add_peer_memcpy(const CUpti_ActivityMemcpyPtoP4& copy);
  void add_memset(const CUpti_ActivityMemset4& memset);
  void add_sync(const CUpti_ActivitySynchronization2& sync, bool at_finish);
  void add_api(const CUpti_ActivityAPI& call, CUpti_CallbackDomain domain);
  void add_marker(const CUpti_ActivityMarker2& marker);
  void add_name(const CUpti_ActivityName& name);
  void add_overhead(const CUpti_ActivityOverhead3& overhead);
  void add_device(const CUpti_ActivityDevice5& device);
  void add_context(const CUpti_ActivityContext3& context);

  const ApiName& api_name(CUpti_CallbackDomain domain, uint32_t cbid);
  const std::string& kernel_name(const char* mangled);
  // Writes `"ph": "X", "cat", "name", "pid", "tid", "ts", "dur"` and opens "args"; the caller writes the
  // args and calls end_event().
  void begin_complete(std::string_view category, std::string_view name, int64_t pid, int64_t tid,
                      uint64_t start_ns, uint64_t end_ns);
  void end_event();
  void write_flow(char phase, uint32_t correlation, int64_t pid, int64_t tid, uint64_t ts_ns);
  void begin_entry();
  void write_ts(uint64_t abs_ns);
  void note_gpu_track(int64_t device, int64_t stream);

  std::ostream& out_;
  TraceHeader header_;
  CallbackNameResolver resolve_callback_name_;
  CaptureStats stats_;
  bool first_entry_ = true;
  bool finished_ = false;
  std::unordered_map<uint64_t, ApiName> api_names_;  // (domain << 32 | cbid) -> resolved once
  std::unordered_map<std::string, std::string> kernel_names_;  // mangled -> demangled, once per name
  std::unordered_map<uint32_t, OpenRange> open_ranges_;         // NVTX range id -> start
  std::unordered_map<uint32_t, uint32_t> context_device_;       // context id -> device id
  std::vector<PendingSync> pending_syncs_;
  std::map<uint32_t, DeviceProperties> devices_;
  std::map<std::pair<int64_t, int64_t>, bool> gpu_tracks_;  // (device, stream) seen
  std::map<std::pair<uint32_t, uint32_t>, std::string> thread_names_;  // (pid, tid) -> NVTX name
};

}  // namespace ptadvise::capture
