// The library the CUDA driver loads through CUDA_INJECTION64_PATH: CUPTI activity tracing of an
// unmodified program, written as one Kineto-compatible trace per process (see docs/CAPTURE.md).
// Everything that turns records into JSON lives in src/format/; this file only talks to CUPTI.
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ptadvise/cupti_trace.h"

#define PTADVISE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using ptadvise::capture::TraceWriter;

constexpr size_t kBufferBytes = 8u << 20;  // 8 MiB per CUPTI buffer
constexpr size_t kBufferAlignment = 8;
constexpr size_t kDefaultBufferBudgetMiB = 256;

// The activity kinds that make the trace; DEVICE and CONTEXT are always on (they describe the hardware).
constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MARKER,  CUPTI_ACTIVITY_KIND_NAME,
    CUPTI_ACTIVITY_KIND_OVERHEAD};

struct Capture {
  std::mutex writer_mutex;  // buffer completions come from CUPTI's thread and from flushing threads
  std::ofstream file;
  std::unique_ptr<TraceWriter> writer;
  std::string temp_path;
  std::string final_path;

  std::mutex pool_mutex;
  std::vector<uint8_t*> free_buffers;
  size_t buffers_allocated = 0;
  size_t max_buffers = 0;

  std::mutex active_mutex;
  bool active = false;
  CUpti_SubscriberHandle subscriber = nullptr;
};

// Deliberately never destroyed: CUPTI may call back from its own thread while static destructors run.
Capture* g_capture = nullptr;
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_finished{false};

const char* result_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) return "unknown CUPTI error";
  return text;
}

std::string output_directory() {
  const char* dir = std::getenv("PTADVISE_CAPTURE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : ".";
}

ptadvise::capture::ProcessIdentity process_identity() {
  ptadvise::capture::ProcessIdentity identity;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) identity.host = host;
  identity.pid = getpid();
  ptadvise::capture::read_rank_environment(identity, [](const char* name) { return std::getenv(name); });
  return identity;
}

std::string command_line() {
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  for (char& c : text) c = c == '\0' ? ' ' : c;
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// `ptadvise run` reads these one-line notes to tell the user why a process has no trace.
void write_status(const std::string& message) {
  std::fprintf(stderr, "ptadvise: %s\n", message.c_str());
  auto identity = process_identity();
  std::string path = output_directory() + "/" + ptadvise::capture::trace_file_name(identity) + ".status";
  if (FILE* status = std::fopen(path.c_str(), "w")) {
    std::fprintf(status, "%s\n", message.c_str());
    std::fclose(status);
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  Capture& capture = *g_capture;
  {
    std::lock_guard lock(capture.pool_mutex);
    if (!capture.free_buffers.empty()) {
      *buffer = capture.free_buffers.back();
      capture.free_buffers.pop_back();
    } else if (capture.buffers_allocated < capture.max_buffers) {
      *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
      if (*buffer != nullptr) ++capture.buffers_allocated;
    }
  }
  if (*buffer != nullptr) {
    *size = kBufferBytes;
    return;
  }
  // Budget spent: CUPTI drops records and counts them (cuptiActivityGetNumDroppedRecords).
  std::lock_guard lock(capture.writer_mutex);
  if (capture.writer) capture.writer->add_refused_buffer();
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                               size_t valid_size) {
  Capture& capture = *g_capture;
  {
    std::lock_guard lock(capture.writer_mutex);
    if (capture.writer && !capture.writer->finished()) {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        capture.writer->add_record(*record);
      }
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
        capture.writer->add_dropped_records(dropped);
      }
    }
  }
  if (buffer == nullptr) return;
  std::lock_guard lock(capture.pool_mutex);
  capture.free_buffers.push_back(buffer);
}

void set_traced_kinds(bool enable) {
  for (CUpti_ActivityKind kind : kTracedKinds) {
    CUptiResult result = enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (result != CUPTI_SUCCESS && enable) {
      std::fprintf(stderr, "ptadvise: CUPTI activity kind %d not enabled: %s\n", static_cast<int>(kind),
                   result_text(result));
    }
  }
  if (!enable) return;
  // Keep the driver domain to calls that enqueue or wait for GPU work; the rest is the runtime's plumbing.
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    bool keep = ptadvise::capture::keep_driver_call(ptadvise::capture::api_display_name(name));
    cuptiActivityEnableDriverApi(cbid, keep ? 1 : 0);
  }
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    if (!ptadvise::capture::keep_runtime_call(ptadvise::capture::api_display_name(name))) {
      cuptiActivityEnableRuntimeApi(cbid, 0);
    }
  }
}

void finish_capture() {
  if (g_capture == nullptr || g_finished.exchange(true)) return;
  Capture& capture = *g_capture;
  // Forced: also hands over buffers still being filled; it does not synchronise the GPU.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lock(capture.writer_mutex);
  if (!capture.writer) return;
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
    capture.writer->add_dropped_records(dropped);
  }
  std::vector<std::string> notes;
  const auto& stats = capture.writer->stats();
  if (stats.refused_buffers > 0 || stats.dropped_records > 0) {
    notes.push_back("the capture's buffer budget was spent; raise PTADVISE_CAPTURE_BUFFER_MB");
  }
  capture.writer->finish(notes);
  capture.file.close();
  if (!capture.file) {
    std::fprintf(stderr, "ptadvise: could not write the trace %s\n", capture.temp_path.c_str());
    return;
  }
  // Atomic publication: a reader never sees half a trace.
  if (std::rename(capture.temp_path.c_str(), capture.final_path.c_str()) != 0) {
    std::fprintf(stderr, "ptadvise: could not rename %s to %s: %s\n", capture.temp_path.c_str(),
                 capture.final_path.c_str(), std::strerror(errno));
  }
}

// Before cudaDeviceReset destroys the context, hand over what it recorded.
void CUPTIAPI on_callback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020 &&
      info != nullptr && info->callbackSite == CUPTI_API_ENTER) {
    cuptiActivityFlushAll(0);
  }
}

size_t buffer_budget_mib() {
  const char* text = std::getenv("PTADVISE_CAPTURE_BUFFER_MB");
  if (text == nullptr) return kDefaultBufferBudgetMiB;
  char* end = nullptr;
  unsigned long value = std::strtoul(text, &end, 10);
  return end != text && value >= 8 ? value : kDefaultBufferBudgetMiB;
}

int initialize() {
  auto* capture = new Capture();
  g_capture = capture;
  capture->max_buffers = buffer_budget_mib() * (1u << 20) / kBufferBytes;
  std::atexit(finish_capture);

  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "ptadvise";
  char other_subscriber[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64] = {};
  params.oldSubscriberName = other_subscriber;
  params.oldSubscriberSize = sizeof other_subscriber;
  CUptiResult result = cuptiSubscribe_v2(&capture->subscriber, on_callback, nullptr, &params);
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    std::string who = other_subscriber[0] != '\0' ? std::string(" (") + other_subscriber + ")" : "";
    write_status("another CUPTI client" + who +
                 " is attached to this process (Nsight Systems/Compute, compute-sanitizer, cuda-gdb or a "
                 "profiler); it runs untraced by ptadvise");
    g_finished = true;
    return 1;
  }
  if (result != CUPTI_SUCCESS) {
    write_status(std::string("CUPTI could not be initialised (") + result_text(result) +
                 "); this process runs untraced");
    g_finished = true;
    return 1;
  }
  cuptiEnableCallback(1, capture->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020);

  auto identity = process_identity();
  std::string dir = output_directory();
  capture->final_path = dir + "/" + ptadvise::capture::trace_file_name(identity);
  capture->temp_path = capture->final_path + ".tmp";
  capture->file.open(capture->temp_path, std::ios::binary | std::ios::trunc);
  if (!capture->file) {
    write_status("cannot write " + capture->temp_path + ": " + std::strerror(errno) +
                 "; this process runs untraced");
    cuptiUnsubscribe(capture->subscriber);
    g_finished = true;
    return 1;
  }
  ptadvise::capture::TraceHeader header;
  header.identity = identity;
  // Without a timestamp callback CUPTI reports CLOCK_REALTIME ns; a whole-second base keeps ts readable.
  auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  header.base_time_ns = now_ns - now_ns % 1000000000;
  header.trace_name = capture->final_path;
  header.command = command_line();
  cuptiGetVersion(&header.cupti_version);
  capture->writer = std::make_unique<TraceWriter>(
      capture->file, std::move(header), [](CUpti_CallbackDomain domain, uint32_t cbid) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) return std::string();
        return std::string(name);
      });

  result = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (result != CUPTI_SUCCESS) {
    write_status(std::string("CUPTI refused the activity buffers (") + result_text(result) +
                 "); this process runs untraced");
    return 1;
  }
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  // The Python shim starts recording after the warm-up steps when `run --skip-steps` asked for it.
  const char* deferred = std::getenv("PTADVISE_CAPTURE_DEFER");
  if (deferred == nullptr || std::strcmp(deferred, "1") != 0) {
    std::lock_guard lock(capture->active_mutex);
    set_traced_kinds(true);
    capture->active = true;
  }
  return 1;
}

}  // namespace

// Called by the CUDA driver when it initialises, once per process.
PTADVISE_EXPORT int InitializeInjection(void) {
  if (g_initialized.exchange(true)) return 1;
  try {
    return initialize();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ptadvise: capture disabled: %s\n", error.what());
    return 1;
  }
}

// Starts (1) or stops (0) recording; used by the Python shim for --skip-steps/--steps. Returns 0 when
// done, -1 when no capture runs in this process.
PTADVISE_EXPORT int ptadvise_capture_set_active(int active) {
  if (g_capture == nullptr || g_finished) return -1;
  Capture& capture = *g_capture;
  std::lock_guard lock(capture.active_mutex);
  bool want = active != 0;
  if (capture.active == want) return 0;
  set_traced_kinds(want);
  capture.active = want;
  if (!want) cuptiActivityFlushAll(0);
  return 0;
}
