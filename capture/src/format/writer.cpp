// The streaming Kineto-compatible JSON writer (see docs/CAPTURE.md for the layout).
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include <simdjson.h>

#include "ptadvise/cupti_trace.h"

namespace ptadvise::capture {

namespace {

constexpr uint32_t kNoStream = 0xFFFFFFFFu;

// Length of the valid UTF-8 sequence starting at text[i], or 0 when the bytes there are not valid UTF-8:
// the shortest prefix (1 to 4 bytes) that simdjson's validator accepts is one whole code point.
size_t utf8_sequence_length(std::string_view text, size_t i) {
  for (size_t length = 1; length <= 4 && i + length <= text.size(); ++length) {
    if (simdjson::validate_utf8(text.data() + i, length)) return length;
  }
  return 0;
}

// A JSON string literal. Names come from users (NVTX) and from compilers: escape what JSON requires and
// replace bytes that are not UTF-8, which a strict parser would reject.
void write_json_string(std::ostream& out, std::string_view text) {
  const bool valid = simdjson::validate_utf8(text.data(), text.size());  // the common case: no per-byte checks
  out.put('"');
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out.put('\\');
      out.put(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out << escaped;
      ++i;
    } else if (c < 0x80) {
      out.put(static_cast<char>(c));
      ++i;
    } else if (valid) {
      out.put(static_cast<char>(c));
      ++i;
    } else if (size_t length = utf8_sequence_length(text, i); length > 0) {
      out.write(text.data() + i, static_cast<std::streamsize>(length));
      i += length;
    } else {
      out.put('?');
      ++i;
    }
  }
  out.put('"');
}

// µs with 3 decimals (ns precision), as Kineto writes `ts` and `dur` relative to baseTimeNanoseconds.
void write_microseconds(std::ostream& out, int64_t ns) {
  char text[32];
  uint64_t magnitude = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(text, sizeof text, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", magnitude / 1000,
                magnitude % 1000);
  out << text;
}

std::string_view overhead_kind_name(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "activity buffer request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM activity init";
    default: return "unknown";
  }
}

}  // namespace

TraceWriter::TraceWriter(std::ostream& out, TraceHeader header, CallbackNameResolver resolve_callback_name)
    : out_(out), header_(std::move(header)), resolve_callback_name_(std::move(resolve_callback_name)) {
  // distributedInfo and baseTimeNanoseconds are known now; deviceProperties come from DEVICE records and
  // are written after traceEvents (key order does not matter to Kineto readers).
  const ProcessIdentity& id = header_.identity;
  out_ << "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"\", \"rank\": " << id.rank.value_or(0)
       << ", \"world_size\": " << id.world_size;
  if (id.local_rank) out_ << ", \"local_rank\": " << *id.local_rank;
  out_ << "},\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " << header_.base_time_ns
       << ",\n  \"traceEvents\": [";
}

void TraceWriter::begin_entry() {
  out_ << (first_entry_ ? "\n    " : ",\n    ");
  first_entry_ = false;
}

void TraceWriter::write_ts(uint64_t abs_ns) {
  write_microseconds(out_, static_cast<int64_t>(abs_ns) - header_.base_time_ns);
}

void TraceWriter::begin_complete(std::string_view category, std::string_view name, int64_t pid, int64_t tid,
                                 uint64_t start_ns, uint64_t end_ns) {
  begin_entry();
  out_ << "{\"ph\": \"X\", \"cat\": \"" << category << "\", \"name\": ";
  write_json_string(out_, name);
  out_ << ", \"pid\": " << pid << ", \"tid\": " << tid << ", \"ts\": ";
  write_ts(start_ns);
  out_ << ", \"dur\": ";
  write_microseconds(out_, end_ns >= start_ns ? static_cast<int64_t>(end_ns - start_ns) : 0);
  out_ << ", \"args\": {";
  ++stats_.events;
}

void TraceWriter::end_event() { out_ << "}}"; }

void TraceWriter::write_flow(char phase, uint32_t correlation, int64_t pid, int64_t tid, uint64_t ts_ns) {
  begin_entry();
  out_ << "{\"ph\": \"" << phase << "\", \"id\": " << correlation << ", \"pid\": " << pid << ", \"tid\": " << tid
       << ", \"ts\": ";
  write_ts(ts_ns);
  out_ << ", \"cat\": \"ac2g\", \"name\": \"ac2g\"" << (phase == 'f' ? ", \"bp\": \"e\"}" : "}");
}

void TraceWriter::note_gpu_track(int64_t device, int64_t stream) { gpu_tracks_[{device, stream}] = true; }

void TraceWriter::add_record(const CUpti_Activity& record) {
  ++stats_.records;
  // CUPTI hands out records of the kind's current struct version; cast by kind (cupti_activity.h).
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      add_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: add_memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record)); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      add_peer_memcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET: add_memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record)); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      add_sync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record), false);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      add_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), CUPTI_CB_DOMAIN_RUNTIME_API);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      add_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), CUPTI_CB_DOMAIN_DRIVER_API);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER: add_marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record)); break;
    case CUPTI_ACTIVITY_KIND_NAME: add_name(reinterpret_cast<const CUpti_ActivityName&>(record)); break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      add_overhead(reinterpret_cast<const CUpti_ActivityOverhead3&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_DEVICE: add_device(reinterpret_cast<const CUpti_ActivityDevice5&>(record)); break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: add_context(reinterpret_cast<const CUpti_ActivityContext3&>(record)); break;
    default: ++stats_.ignored_records; break;
  }
}

const std::string& TraceWriter::kernel_name(const char* mangled) {
  std::string key = mangled != nullptr ? mangled : "";
  auto found = kernel_names_.find(key);
  if (found != kernel_names_.end()) return found->second;
  return kernel_names_.emplace(key, demangle(mangled)).first->second;
}

void TraceWriter::add_kernel(const CUpti_ActivityKernel10& kernel) {
  if (kernel.start == 0 || kernel.end == 0) {
    ++stats_.missing_timestamps;
    return;
  }
  begin_complete("kernel", kernel_name(kernel.name), kernel.deviceId, kernel.streamId, kernel.start, kernel.end);
  out_ << "\"device\": " << kernel.deviceId << ", \"context\": " << kernel.contextId
       << ", \"stream\": " << kernel.streamId << ", \"correlation\": " << kernel.correlationId
       << ", \"registers per thread\": " << kernel.registersPerThread
       << ", \"shared memory\": " << (kernel.staticSharedMemory + kernel.dynamicSharedMemory) << ", \"grid\": ["
       << kernel.gridX << ", " << kernel.gridY << ", " << kernel.gridZ << "], \"block\": [" << kernel.blockX << ", "
       << kernel.blockY << ", " << kernel.blockZ << "]";
  if (kernel.graphId != 0) out_ << ", \"graph id\": " << kernel.graphId << ", \"graph node id\": " << kernel.graphNodeId;
  end_event();
  note_gpu_track(kernel.deviceId, kernel.streamId);
  write_flow('f', kernel.correlationId, kernel.deviceId, kernel.streamId, kernel.start);
}

void TraceWriter::add_memcpy(const CUpti_ActivityMemcpy6& copy) {
  if (copy.start == 0 || copy.end == 0) {
    ++stats_.missing_timestamps;
    return;
  }
  begin_complete("gpu_memcpy", memcpy_event_name(copy.copyKind, copy.srcKind, copy.dstKind), copy.deviceId,
                 copy.streamId, copy.start, copy.end);
  uint64_t duration = copy.end > copy.start ? copy.end - copy.start : 0;
  // bytes per ns is GB/s.
  double bandwidth = duration > 0 ? static_cast<double>(copy.bytes) / static_cast<double>(duration) : 0.0;
  char bandwidth_text[32];
  std::snprintf(bandwidth_text, sizeof bandwidth_text, "%.6g", bandwidth);
  out_ << "\"device\": " << copy.deviceId << ", \"context\": " << copy.contextId << ", \"stream\": " << copy.streamId
       << ", \"correlation\": " << copy.correlationId << ", \"bytes\": " << copy.bytes
       << ", \"memory bandwidth (GB/s)\": " << bandwidth_text
       << ", \"async\": " << ((copy.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0 ? "true" : "false");
  if (copy.copyCount > 1) out_ << ", \"copy count\": " << copy.copyCount;
  end_event();
  note_gpu_track(copy.deviceId, copy.streamId);
  write_flow('f', copy.correlationId, copy.deviceId, copy.streamId, copy.start);
}

void TraceWriter::add_peer_memcpy(const CUpti_ActivityMemcpyPtoP4& copy) {
  if (copy.start == 0 || copy.end == 0) {
    ++stats_.missing_timestamps;
    return;
  }
  begin_complete("gpu_memcpy", memcpy_event_name(copy.copyKind, copy.srcKind, copy.dstKind), copy.deviceId,
                 copy.streamId, copy.start, copy.end);
  uint64_t duration = copy.end > copy.start ? copy.end - copy.start : 0;
  char bandwidth_text[32];
  std::snprintf(bandwidth_text, sizeof bandwidth_text, "%.6g",
                duration > 0 ? static_cast<double>(copy.bytes) / static_cast<double>(duration) : 0.0);
  out_ << "\"device\": " << copy.deviceId << ", \"context\": " << copy.contextId << ", \"stream\": " << copy.streamId
       << ", \"correlation\": " << copy.correlationId << ", \"bytes\": " << copy.bytes
       << ", \"memory bandwidth (GB/s)\": " << bandwidth_text << ", \"src device\": " << copy.srcDeviceId
       << ", \"dst device\": " << copy.dstDeviceId;
  end_event();
  note_gpu_track(copy.deviceId, copy.streamId);
  write_flow('f', copy.correlationId, copy.deviceId, copy.streamId, copy.start);
}

void TraceWriter::add_memset(const CUpti_ActivityMemset4& memset) {
  if (memset.start == 0 || memset.end == 0) {
    ++stats_.missing_timestamps;
    return;
  }
  begin_complete("gpu_memset", memset_event_name(memset.memoryKind), memset.deviceId, memset.streamId, memset.start,
                 memset.end);
  out_ << "\"device\": " << memset.deviceId << ", \"context\": " << memset.contextId
       << ", \"stream\": " << memset.streamId << ", \"correlation\": " << memset.correlationId
       << ", \"bytes\": " << memset.bytes
       << ", \"async\": " << ((memset.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0 ? "true" : "false");
  end_event();
  note_gpu_track(memset.deviceId, memset.streamId);
  write_flow('f', memset.correlationId, memset.deviceId, memset.streamId, memset.start);
}

void TraceWriter::add_sync(const CUpti_ActivitySynchronization2& sync, bool at_finish) {
  if (sync.start == 0 || sync.end == 0) {
    ++stats_.missing_timestamps;
    return;
  }
  // Sync records name a context, not a device; CONTEXT records map one to the other. They normally come
  // first, but a sync that arrives before its context waits until finish().
  auto device = context_device_.find(sync.contextId);
  if (device == context_device_.end() && !at_finish) {
    pending_syncs_.push_back({sync});
    return;
  }
  int64_t device_id = device != context_device_.end() ? device->second : 0;
  bool has_stream = sync.streamId != kNoStream;
  // Kineto puts syncs on the GPU row of their stream; a context sync has none, stream 0 stands for it.
  int64_t stream = has_stream ? sync.streamId : 0;
  std::string_view name = sync_event_name(sync.type);
  begin_complete("cuda_sync", name, device_id, stream, sync.start, sync.end);
  out_ << "\"cuda_sync_kind\": \"" << name << "\", \"device\": " << device_id << ", \"context\": " << sync.contextId
       << ", \"stream\": " << (has_stream ? static_cast<int64_t>(sync.streamId) : -1)
       << ", \"correlation\": " << sync.correlationId;
  if (sync.cudaEventId != kNoStream && sync.type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE &&
      sync.type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE) {
    out_ << ", \"cuda event\": " << sync.cudaEventId;
  }
  end_event();
  note_gpu_track(device_id, stream);
  write_flow('f', sync.correlationId, device_id, stream, sync.start);
}

const TraceWriter::ApiName& TraceWriter::api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  uint64_t key = (static_cast<uint64_t>(domain) << 32) | cbid;
  auto found = api_names_.find(key);
  if (found != api_names_.end()) return found->second;
  ApiName entry;
  entry.name = api_display_name(resolve_callback_name_ ? resolve_callback_name_(domain, cbid) : std::string());
  if (entry.name.empty()) entry.name = (domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver call " : "runtime call ") +
                                       std::to_string(cbid);
  entry.keep = domain == CUPTI_CB_DOMAIN_DRIVER_API ? keep_driver_call(entry.name) : keep_runtime_call(entry.name);
  entry.flow = starts_flow(entry.name);
  return api_names_.emplace(key, std::move(entry)).first->second;
}

void TraceWriter::add_api(const CUpti_ActivityAPI& call, CUpti_CallbackDomain domain) {
  const ApiName& name = api_name(domain, call.cbid);
  if (!name.keep) {
    ++stats_.filtered_api_calls;
    return;
  }
  if (call.start == 0 || call.end == 0) {
    ++stats_.missing_timestamps;
    return;
  }
  begin_complete(domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuda_driver" : "cuda_runtime", name.name, call.processId,
                 call.threadId, call.start, call.end);
  out_ << "\"cbid\": " << call.cbid << ", \"correlation\": " << call.correlationId;
  if (call.returnValue != 0) out_ << ", \"return value\": " << call.returnValue;
  end_event();
  if (name.flow) write_flow('s', call.correlationId, call.processId, call.threadId, call.start);
}

void TraceWriter::add_marker(const CUpti_ActivityMarker2& marker) {
  bool on_thread = marker.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
                   marker.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS;
  uint32_t pid = on_thread ? marker.objectId.pt.processId : static_cast<uint32_t>(header_.identity.pid);
  uint32_t tid = on_thread ? marker.objectId.pt.threadId : 0;
  if ((marker.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
    OpenRange range;
    range.start_ns = marker.timestamp;
    range.name = marker.name != nullptr ? marker.name : "";
    range.domain = marker.domain != nullptr ? marker.domain : "";
    range.pid = pid;
    range.tid = tid;
    open_ranges_[marker.id] = std::move(range);
    return;
  }
  if ((marker.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0) {
    auto open = open_ranges_.find(marker.id);
    if (open == open_ranges_.end()) {
      ++stats_.unpaired_ranges;
      return;
    }
    OpenRange range = std::move(open->second);
    open_ranges_.erase(open);
    if (range.start_ns == 0 || marker.timestamp == 0) {
      ++stats_.missing_timestamps;
      return;
    }
    // A range may end on another thread (nvtxRangeEnd); it is drawn where it started.
    begin_complete("user_annotation", range.name, range.pid, range.tid, range.start_ns, marker.timestamp);
    if (!range.domain.empty()) {
      out_ << "\"domain\": ";
      write_json_string(out_, range.domain);
    }
    end_event();
    return;
  }
  if ((marker.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) != 0 && marker.timestamp != 0) {
    begin_entry();
    out_ << "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"user_annotation\", \"name\": ";
    write_json_string(out_, marker.name != nullptr ? marker.name : "");
    out_ << ", \"pid\": " << pid << ", \"tid\": " << tid << ", \"ts\": ";
    write_ts(marker.timestamp);
    out_ << "}";
    ++stats_.events;
  }
}

void TraceWriter::add_name(const CUpti_ActivityName& name) {
  if (name.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD && name.name != nullptr) {
    thread_names_[{name.objectId.pt.processId, name.objectId.pt.threadId}] = name.name;
  }
}

void TraceWriter::add_overhead(const CUpti_ActivityOverhead3& overhead) {
  std::string kind(overhead_kind_name(overhead.overheadKind));
  if (overhead.end > overhead.start && overhead.start != 0) stats_.overhead_ns[kind] += overhead.end - overhead.start;
  ++stats_.overhead_count[kind];
  if (overhead.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD && overhead.start != 0 && overhead.end != 0) {
    begin_complete("overhead", "CUPTI Overhead: " + kind, overhead.objectId.pt.processId,
                   overhead.objectId.pt.threadId, overhead.start, overhead.end);
    out_ << "\"overhead kind\": \"" << kind << "\"";
    end_event();
  }
}

void TraceWriter::add_device(const CUpti_ActivityDevice5& device) {
  DeviceProperties properties;
  properties.id = device.id;
  properties.name = device.name != nullptr ? device.name : "";
  properties.total_global_mem = device.globalMemorySize;
  properties.compute_major = device.computeCapabilityMajor;
  properties.compute_minor = device.computeCapabilityMinor;
  properties.num_sms = device.numMultiprocessors;
  properties.warp_size = device.numThreadsPerWarp;
  properties.max_threads_per_block = device.maxThreadsPerBlock;
  properties.regs_per_block = device.maxRegistersPerBlock;
  properties.shared_mem_per_block = device.maxSharedMemoryPerBlock;
  properties.max_shared_mem_per_sm = device.maxSharedMemoryPerMultiprocessor;
  properties.l2_cache_size = device.l2CacheSize;
  devices_[device.id] = std::move(properties);
}

void TraceWriter::add_context(const CUpti_ActivityContext3& context) {
  context_device_[context.contextId] = context.deviceId;
}

void TraceWriter::finish(const std::vector<std::string>& extra_notes) {
  if (finished_) return;
  finished_ = true;
  for (const PendingSync& pending : pending_syncs_) add_sync(pending.record, true);
  pending_syncs_.clear();
  stats_.unpaired_ranges += open_ranges_.size();  // ranges still open at exit have no end to draw
  open_ranges_.clear();

  // Track names, as Kineto writes them, so viewers label GPU rows.
  std::map<int64_t, bool> gpu_processes;
  for (const auto& [track, seen] : gpu_tracks_) gpu_processes[track.first] = seen;
  for (const auto& [device, seen] : gpu_processes) {
    begin_entry();
    out_ << "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": " << device
         << ", \"tid\": 0, \"args\": {\"name\": \"GPU " << device << "\"}}";
  }
  for (const auto& [track, seen] : gpu_tracks_) {
    begin_entry();
    out_ << "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": " << track.first
         << ", \"tid\": " << track.second << ", \"args\": {\"name\": \"stream " << track.second << "\"}}";
  }
  for (const auto& [thread, name] : thread_names_) {
    begin_entry();
    out_ << "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": " << thread.first
         << ", \"tid\": " << thread.second << ", \"args\": {\"name\": ";
    write_json_string(out_, name);
    out_ << "}}";
  }
  out_ << "\n  ],\n  \"deviceProperties\": [";
  bool first = true;
  for (const auto& [id, device] : devices_) {
    out_ << (first ? "\n    " : ",\n    ");
    first = false;
    out_ << "{\"id\": " << device.id << ", \"name\": ";
    write_json_string(out_, device.name);
    out_ << ", \"totalGlobalMem\": " << device.total_global_mem << ", \"computeMajor\": " << device.compute_major
         << ", \"computeMinor\": " << device.compute_minor << ", \"maxThreadsPerBlock\": "
         << device.max_threads_per_block << ", \"regsPerBlock\": " << device.regs_per_block
         << ", \"warpSize\": " << device.warp_size << ", \"sharedMemPerBlock\": " << device.shared_mem_per_block
         << ", \"numSms\": " << device.num_sms << ", \"sharedMemPerMultiprocessor\": " << device.max_shared_mem_per_sm
         << ", \"l2CacheSize\": " << device.l2_cache_size << "}";
  }
  out_ << (first ? "],\n" : "\n  ],\n");
  out_ << "  \"cupti_version\": " << header_.cupti_version << ",\n  \"ptadvise\": {\"capture\": \"cupti\", "
       << "\"version\": \"" << PTADVISE_VERSION_STRING << "\", \"command\": ";
  write_json_string(out_, header_.command);
  out_ << ", \"host\": ";
  write_json_string(out_, header_.identity.host);
  out_ << ", \"pid\": " << header_.identity.pid << ", \"records\": " << stats_.records
       << ", \"events\": " << stats_.events << ", \"dropped records\": " << stats_.dropped_records
       << ", \"refused buffers\": " << stats_.refused_buffers
       << ", \"filtered api calls\": " << stats_.filtered_api_calls
       << ", \"missing timestamps\": " << stats_.missing_timestamps
       << ", \"unpaired ranges\": " << stats_.unpaired_ranges << ", \"overhead\": {";
  first = true;
  for (const auto& [kind, count] : stats_.overhead_count) {
    out_ << (first ? "" : ", ");
    first = false;
    write_json_string(out_, kind);
    auto ns = stats_.overhead_ns.find(kind);
    out_ << ": {\"count\": " << count << ", \"ns\": " << (ns != stats_.overhead_ns.end() ? ns->second : 0) << "}";
  }
  out_ << "}, \"notes\": [";
  first = true;
  for (const std::string& note : extra_notes) {
    out_ << (first ? "" : ", ");
    first = false;
    write_json_string(out_, note);
  }
  out_ << "]},\n  \"traceName\": ";
  write_json_string(out_, header_.trace_name);
  out_ << "\n}\n";
  out_.flush();
}

}  // namespace ptadvise::capture
