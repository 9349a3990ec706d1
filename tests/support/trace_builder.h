// Writes small Kineto-like traces for tests, in every format era the loader accepts.
//
//   ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
//   trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
//   trace.annotation("ProfilerStep#3", 0, 1000);
//   trace.launch("gemm_kernel", 10, 5, 20, 300);
//   ptadvise::Timeline timeline = trace.load();
//
// Times are given in microseconds as doubles. Integer eras write them as integers when whole (else with
// 3 decimals); the newest eras write 3 decimals relative to baseTimeNanoseconds (as numbers or strings).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ptadvise/loader.h"
#include "ptadvise/timeline.h"

namespace ptadvise::testing {

enum class Era {
  Kineto2020,        // bare array; Operator/Runtime/Kernel/Memcpy/Memset; "async" flows; GPU tid "stream N"
  Kineto2021,        // object form, same capitalised categories, `Call stack` args
  Kineto2022,        // lowercase categories, "async_cpu_to_gpu" flows
  Kineto2023,        // "ac2g" flows, integer absolute µs
  RelativeFloatUs,   // µs with 3 decimals as numbers, relative to baseTimeNanoseconds
  RelativeStringUs,  // µs with 3 decimals as strings ("123.456"), relative to baseTimeNanoseconds
  Legacy,            // pre-Kineto export: bare array of X events, no cat, empty args, pid "CPU functions"
};

class TraceBuilder {
 public:
  explicit TraceBuilder(Era era = Era::Kineto2023) : era_(era) {}

  Era era() const { return era_; }
  // OS pid of the CPU events (default 4242).
  TraceBuilder& cpu_pid(int64_t pid) {
    cpu_pid_ = pid;
    return *this;
  }
  // Written as baseTimeNanoseconds in the relative eras.
  TraceBuilder& base_time_ns(int64_t base) {
    base_time_ns_ = base;
    return *this;
  }
  // Puts the top-level metadata (distributedInfo, baseTimeNanoseconds) after traceEvents, as on-demand
  // traces do.
  TraceBuilder& metadata_after_events(bool after = true) {
    metadata_after_events_ = after;
    return *this;
  }

  TraceBuilder& device(int id, const std::string& name, int cc_major, int cc_minor, int64_t total_mem,
                       int num_sms = 108) {
    devices_.push_back("{\"id\": " + std::to_string(id) + ", \"name\": " + quote(name) +
                       ", \"totalGlobalMem\": " + std::to_string(total_mem) +
                       ", \"computeMajor\": " + std::to_string(cc_major) +
                       ", \"computeMinor\": " + std::to_string(cc_minor) + ", \"numSms\": " +
                       std::to_string(num_sms) + ", \"warpSize\": 32}");
    return *this;
  }

  TraceBuilder& distributed(int rank, int world_size) {
    distributed_ = "{\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
                   ", \"world_size\": " + std::to_string(world_size) + "}";
    return *this;
  }

  // A top-level key written verbatim (value is JSON text).
  TraceBuilder& top_level(const std::string& key, const std::string& value_json) {
    extra_top_level_.emplace_back(key, value_json);
    return *this;
  }

  // CPU operator (cpu_op / Operator). args_json is the inside of the args object: "\"External id\": 3".
  TraceBuilder& cpu_op(const std::string& name, double ts_us, double dur_us, const std::string& args_json = "",
                       int64_t tid = 1) {
    std::string args = args_json;
    if (era_ == Era::Kineto2021 && args.find("Call stack") == std::string::npos) {
      args = join(args, "\"Call stack\": \"train.py(12): step;<built-in method " + escape(name) + ">\"");
    }
    return complete(modern() ? "cpu_op" : "Operator", name, ts_us, dur_us, cpu_pid_text(), std::to_string(tid),
                    args);
  }

  // user_annotation: ProfilerStep#N, record_function ranges, enumerate(DataLoader)#...__next__.
  TraceBuilder& annotation(const std::string& name, double ts_us, double dur_us, int64_t tid = 1,
                           const std::string& args_json = "") {
    return complete(modern() ? "user_annotation" : "Operator", name, ts_us, dur_us, cpu_pid_text(),
                    std::to_string(tid), args_json);
  }

  // python_function frame such as "train.py(42): forward"; parent_id < 0 writes null.
  TraceBuilder& python_frame(const std::string& name, double ts_us, double dur_us, int64_t python_id,
                             int64_t parent_id, int64_t tid = 1) {
    std::string args = "\"Python id\": " + std::to_string(python_id) + ", \"Python parent id\": " +
                       (parent_id < 0 ? std::string("null") : std::to_string(parent_id));
    return complete("python_function", name, ts_us, dur_us, cpu_pid_text(), std::to_string(tid), args);
  }

  // CUDA runtime call (cuda_runtime / Runtime) carrying `correlation`.
  TraceBuilder& runtime(const std::string& name, double ts_us, double dur_us, int64_t correlation,
                        int64_t tid = 1, const std::string& args_json = "") {
    std::string args = join("\"cbid\": 211, \"correlation\": " + std::to_string(correlation), args_json);
    return complete(modern() ? "cuda_runtime" : "Runtime", name, ts_us, dur_us, cpu_pid_text(),
                    std::to_string(tid), args);
  }

  // CUDA driver call (cuda_driver).
  TraceBuilder& driver(const std::string& name, double ts_us, double dur_us, int64_t correlation,
                       int64_t tid = 1) {
    return complete("cuda_driver", name, ts_us, dur_us, cpu_pid_text(), std::to_string(tid),
                    "\"cbid\": 307, \"correlation\": " + std::to_string(correlation));
  }

  TraceBuilder& kernel(const std::string& name, double ts_us, double dur_us, int64_t correlation, int device = 0,
                       int64_t stream = 7, const std::string& args_json = "") {
    std::string args = gpu_args(correlation, device, stream) +
                       ", \"registers per thread\": 32, \"shared memory\": 0, \"grid\": [1, 1, 1], "
                       "\"block\": [128, 1, 1]";
    return complete(modern() ? "kernel" : "Kernel", name, ts_us, dur_us, std::to_string(device),
                    gpu_tid(stream), join(args, args_json));
  }

  // kind "HtoD", "DtoH", "DtoD"...; src/dst "Pageable", "Pinned", "Device".
  TraceBuilder& memcpy(const std::string& kind, const std::string& src, const std::string& dst, double ts_us,
                       double dur_us, int64_t bytes, int64_t correlation, int device = 0, int64_t stream = 7) {
    std::string args = gpu_args(correlation, device, stream) + ", \"bytes\": " + std::to_string(bytes) +
                       ", \"memory bandwidth (GB/s)\": 1.5";
    return complete(modern() ? "gpu_memcpy" : "Memcpy", "Memcpy " + kind + " (" + src + " -> " + dst + ")",
                    ts_us, dur_us, std::to_string(device), gpu_tid(stream), args);
  }

  TraceBuilder& memset(double ts_us, double dur_us, int64_t bytes, int64_t correlation, int device = 0,
                       int64_t stream = 7, const std::string& dst = "Device") {
    std::string args = gpu_args(correlation, device, stream) + ", \"bytes\": " + std::to_string(bytes);
    return complete(modern() ? "gpu_memset" : "Memset", "Memset (" + dst + ")", ts_us, dur_us,
                    std::to_string(device), gpu_tid(stream), args);
  }

  // GPU-side synchronisation record (cuda_sync): "Stream Sync", "Event Sync", "Context Sync", ...
  TraceBuilder& sync(const std::string& name, double ts_us, double dur_us, int64_t correlation = -1,
                     int device = 0, int64_t stream = 7) {
    std::string args = "\"cuda_sync_kind\": " + quote(name) + ", \"device\": " + std::to_string(device) +
                       ", \"stream\": " + std::to_string(stream);
    if (correlation >= 0) args += ", \"correlation\": " + std::to_string(correlation);
    return complete("cuda_sync", name, ts_us, dur_us, std::to_string(device), gpu_tid(stream), args);
  }

  // GPU-side mirror of a user annotation (gpu_user_annotation).
  TraceBuilder& gpu_annotation(const std::string& name, double ts_us, double dur_us, int device = 0,
                               int64_t stream = 7) {
    return complete("gpu_user_annotation", name, ts_us, dur_us, std::to_string(device), gpu_tid(stream),
                    "\"device\": " + std::to_string(device) + ", \"stream\": " + std::to_string(stream));
  }

  // [memory] instant event with allocator totals.
  TraceBuilder& memory_instant(double ts_us, int64_t total_allocated, int64_t total_reserved, int device = 0,
                               int64_t bytes = 0, int64_t tid = 1) {
    std::string event = "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", "
                        "\"pid\": " +
                        cpu_pid_text() + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + time_text(ts_us) +
                        ", \"args\": {\"Total Reserved\": " + std::to_string(total_reserved) +
                        ", \"Total Allocated\": " + std::to_string(total_allocated) +
                        ", \"Bytes\": " + std::to_string(bytes) + ", \"Device Id\": " + std::to_string(device) +
                        ", \"Device Type\": 1}}";
    events_.push_back(std::move(event));
    return *this;
  }

  // Flow pair from a CPU launch to its GPU op, in the era's flow category.
  TraceBuilder& flow(int64_t id, double cpu_ts_us, int64_t cpu_tid, double gpu_ts_us, int device, int64_t stream) {
    if (era_ == Era::Legacy) return *this;
    std::string cat = flow_category();
    std::string name = era_ >= Era::Kineto2023 ? "ac2g" : "launch";
    events_.push_back("{\"ph\": \"s\", \"id\": " + std::to_string(id) + ", \"pid\": " + cpu_pid_text() +
                      ", \"tid\": " + std::to_string(cpu_tid) + ", \"ts\": " + time_text(cpu_ts_us) +
                      ", \"cat\": " + quote(cat) + ", \"name\": " + quote(name) + "}");
    events_.push_back("{\"ph\": \"f\", \"id\": " + std::to_string(id) + ", \"pid\": " + std::to_string(device) +
                      ", \"tid\": " + gpu_tid(stream) + ", \"ts\": " + time_text(gpu_ts_us) +
                      ", \"cat\": " + quote(cat) + ", \"name\": " + quote(name) + ", \"bp\": \"e\"}");
    return *this;
  }

  // cudaLaunchKernel + kernel + flow with a fresh correlation id; returns that id.
  int64_t launch(const std::string& kernel_name, double cpu_ts_us, double cpu_dur_us, double gpu_ts_us,
                 double gpu_dur_us, int device = 0, int64_t stream = 7, int64_t tid = 1) {
    int64_t correlation = next_correlation_++;
    runtime("cudaLaunchKernel", cpu_ts_us, cpu_dur_us, correlation, tid);
    kernel(kernel_name, gpu_ts_us, gpu_dur_us, correlation, device, stream);
    flow(correlation, cpu_ts_us, tid, gpu_ts_us, device, stream);
    return correlation;
  }

  // A fresh correlation id for hand-written runtime/GPU pairs.
  int64_t next_correlation() { return next_correlation_++; }

  TraceBuilder& process_name(const std::string& pid_json, const std::string& name) {
    events_.push_back("{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": " + time_text(0) +
                      ", \"pid\": " + pid_json + ", \"tid\": 0, \"args\": {\"name\": " + quote(name) + "}}");
    return *this;
  }
  TraceBuilder& thread_name(const std::string& pid_json, const std::string& tid_json, const std::string& name) {
    events_.push_back("{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": " + time_text(0) + ", \"pid\": " +
                      pid_json + ", \"tid\": " + tid_json + ", \"args\": {\"name\": " + quote(name) + "}}");
    return *this;
  }

  // Any event written verbatim (a JSON object text).
  TraceBuilder& raw_event(const std::string& event_json) {
    events_.push_back(event_json);
    return *this;
  }

  // Generic complete event in the current era (legacy drops cat and args).
  TraceBuilder& complete(const std::string& category, const std::string& name, double ts_us, double dur_us,
                         const std::string& pid_json, const std::string& tid_json, const std::string& args_json) {
    std::string event = "{\"ph\": \"X\", ";
    if (era_ == Era::Legacy) {
      event += "\"name\": " + quote(name) + ", \"ts\": " + time_text(ts_us) + ", \"dur\": " + time_text(dur_us) +
               ", \"tid\": " + tid_json + ", \"pid\": \"CPU functions\", \"args\": {}}";
    } else {
      event += "\"cat\": " + quote(category) + ", \"name\": " + quote(name) + ", \"pid\": " + pid_json +
               ", \"tid\": " + tid_json + ", \"ts\": " + time_text(ts_us) + ", \"dur\": " + time_text(dur_us) +
               ", \"args\": {" + args_json + "}}";
    }
    events_.push_back(std::move(event));
    return *this;
  }

  std::string json() const {
    std::string events = "[\n";
    for (size_t i = 0; i < events_.size(); ++i) {
      events += "  " + events_[i] + (i + 1 < events_.size() ? ",\n" : "\n");
    }
    events += "]";
    if (era_ == Era::Kineto2020 || era_ == Era::Legacy) return events + "\n";

    std::vector<std::pair<std::string, std::string>> before{{"schemaVersion", "1"}};
    std::vector<std::pair<std::string, std::string>> metadata;
    if (!devices_.empty()) {
      std::string list = "[";
      for (size_t i = 0; i < devices_.size(); ++i) list += (i ? ", " : "") + devices_[i];
      before.emplace_back("deviceProperties", list + "]");
    }
    if (!distributed_.empty()) metadata.emplace_back("distributedInfo", distributed_);
    if (relative()) {
      metadata.emplace_back("displayTimeUnit", "\"ms\"");
      metadata.emplace_back("baseTimeNanoseconds", std::to_string(base_time_ns_));
    }
    for (const auto& entry : extra_top_level_) metadata.push_back(entry);

    std::string text = "{\n";
    auto write = [&text](const std::pair<std::string, std::string>& entry) {
      text += "  " + quote(entry.first) + ": " + entry.second + ",\n";
    };
    for (const auto& entry : before) write(entry);
    if (!metadata_after_events_) {
      for (const auto& entry : metadata) write(entry);
    }
    text += "  \"traceEvents\": " + events;
    if (metadata_after_events_) {
      for (const auto& entry : metadata) {
        text += ",\n";
        text += "  " + quote(entry.first) + ": " + entry.second;
      }
    }
    text += ",\n  \"traceName\": \"trace.json\"\n}\n";
    return text;
  }

  // Loads json() with load_trace_bytes; fails the current test on a LoadError.
  Timeline load(const std::string& label = "trace.json") const {
    auto result = load_trace_bytes(json(), label);
    if (auto* error = std::get_if<LoadError>(&result)) {
      FAIL_CHECK("load failed: " << error->message);
      return Timeline{};
    }
    return std::move(std::get<Timeline>(result));
  }

  // JSON string literal with escapes.
  static std::string quote(std::string_view text) { return "\"" + escape(text) + "\""; }
  static std::string escape(std::string_view text) {
    std::string out;
    for (char c : text) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        out += buffer;
      } else {
        out += c;
      }
    }
    return out;
  }

 private:
  bool modern() const { return era_ >= Era::Kineto2022; }
  bool relative() const { return era_ == Era::RelativeFloatUs || era_ == Era::RelativeStringUs; }
  std::string flow_category() const {
    if (era_ <= Era::Kineto2021) return "async";
    if (era_ == Era::Kineto2022) return "async_cpu_to_gpu";
    return "ac2g";
  }
  std::string cpu_pid_text() const { return std::to_string(cpu_pid_); }
  std::string gpu_tid(int64_t stream) const {
    return era_ <= Era::Kineto2021 ? quote("stream " + std::to_string(stream)) : std::to_string(stream);
  }
  std::string gpu_args(int64_t correlation, int device, int64_t stream) const {
    return "\"device\": " + std::to_string(device) + ", \"context\": 1, \"stream\": " + std::to_string(stream) +
           ", \"correlation\": " + std::to_string(correlation);
  }
  static std::string join(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return a + ", " + b;
  }
  std::string time_text(double us) const {
    char buffer[64];
    if (era_ == Era::RelativeStringUs) {
      std::snprintf(buffer, sizeof buffer, "\"%.3f\"", us);
    } else if (era_ == Era::RelativeFloatUs) {
      std::snprintf(buffer, sizeof buffer, "%.3f", us);
    } else if (std::floor(us) == us) {
      std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(us));
    } else {
      std::snprintf(buffer, sizeof buffer, "%.3f", us);
    }
    return buffer;
  }

  Era era_;
  int64_t cpu_pid_ = 4242;
  int64_t base_time_ns_ = 1700000000000000000;
  bool metadata_after_events_ = false;
  int64_t next_correlation_ = 1000;
  std::vector<std::string> devices_;
  std::string distributed_;
  std::vector<std::pair<std::string, std::string>> extra_top_level_;
  std::vector<std::string> events_;
};

}  // namespace ptadvise::testing
