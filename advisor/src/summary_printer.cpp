// Renders a Summary as text or JSON. No analysis here: only formatting of the computed figures.
#include "ptadvise/summary_printer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace ptadvise {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string shorten(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit - 3)) + "...";
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string pad_left(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

std::string device_line(const DeviceInfo& device) {
  std::string line = "GPU " + std::to_string(device.id);
  line += ": " + (device.name.empty() ? (device.vendor.empty() ? std::string("(unnamed device)")
                                                                   : "(unnamed " + device.vendor + " device)")
                                       : device.name);
  std::string details;
  if (device.compute_major >= 0) {
    details += "cc " + std::to_string(device.compute_major) + "." + std::to_string(std::max(device.compute_minor, 0));
    if (device.compute_inferred) details += " from kernel names";
  }
  if (device.total_global_mem > 0) {
    if (!details.empty()) details += ", ";
    details += format("%.1f GiB", static_cast<double>(device.total_global_mem) / (1024.0 * 1024.0 * 1024.0));
  }
  if (device.num_sms > 0) {
    if (!details.empty()) details += ", ";
    details += std::to_string(device.num_sms) + " SMs";
  }
  if (device.properties_borrowed) details += std::string(details.empty() ? "" : "; ") + "not in deviceProperties, "
                                             "which lists only this model";
  if (!details.empty()) line += " (" + details + ")";
  return line;
}

std::string ms(double value) { return format("%.3f ms", value); }

void stat_table(std::string& out, const char* title, const std::vector<KernelStat>& stats) {
  if (stats.empty()) return;
  constexpr size_t kNameWidth = 72;
  out += "\n  " + pad(title, kNameWidth + 2) + pad_left("count", 8) + pad_left("total ms", 12) + "\n";
  for (const KernelStat& stat : stats) {
    out += "    " + pad(shorten(stat.name, kNameWidth), kNameWidth) + pad_left(std::to_string(stat.count), 8) +
           pad_left(format("%.3f", static_cast<double>(stat.total_ns) / 1e6), 12) + "\n";
  }
}

double idle_ms_of(const Summary& summary, IdleCause cause) {
  for (const IdleShare& share : summary.idle_causes) {
    if (share.cause == cause) return share.ms;
  }
  return 0;
}

// A small JSON writer: objects, arrays and scalars with optional indentation.
class JsonWriter {
 public:
  explicit JsonWriter(int indent) : indent_(indent) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view name) {
    separate();
    string_literal(name);
    out_ += indent_ > 0 ? ": " : ":";
    after_key_ = true;
  }
  void value(std::string_view text) {
    separate();
    string_literal(text);
  }
  void value(const char* text) { value(std::string_view(text)); }
  void value(double number) {
    separate();
    if (!std::isfinite(number)) {
      out_ += "null";
      return;
    }
    // Six decimals are more than any figure here needs; trailing zeros are dropped.
    double rounded = std::round(number * 1e6) / 1e6;
    if (rounded == 0) rounded = 0;  // no "-0"
    char buffer[64];
    auto result = std::to_chars(buffer, buffer + sizeof buffer, rounded);
    out_.append(buffer, result.ptr);
  }
  void value(int64_t number) {
    separate();
    out_ += std::to_string(number);
  }
  void null() {
    separate();
    out_ += "null";
  }
  const std::string& text() const { return out_; }

 private:
  void open(char bracket) {
    separate();
    out_ += bracket;
    first_.push_back(true);
  }
  void close(char bracket) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += bracket;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
  void newline() {
    if (indent_ <= 0) return;
    out_ += '\n';
    out_.append(first_.size() * static_cast<size_t>(indent_), ' ');
  }
  void string_literal(std::string_view text) {
    out_ += '"';
    for (char c : text) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\r':
          out_ += "\\r";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out_ += buffer;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }

  int indent_;
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

void write_stats(JsonWriter& json, const std::vector<KernelStat>& stats) {
  json.begin_array();
  for (const KernelStat& stat : stats) {
    json.begin_object();
    json.key("name");
    json.value(stat.name);
    json.key("count");
    json.value(stat.count);
    json.key("total_ms");
    json.value(static_cast<double>(stat.total_ns) / 1e6);
    json.end_object();
  }
  json.end_array();
}

void write_summary(JsonWriter& json, const Summary& summary) {
  json.begin_object();
  json.key("path");
  json.value(summary.path);
  json.key("rank");
  if (summary.rank) {
    json.value(static_cast<int64_t>(*summary.rank));
  } else {
    json.null();
  }
  json.key("devices");
  json.begin_array();
  for (const DeviceInfo& device : summary.devices) {
    json.begin_object();
    json.key("id");
    json.value(static_cast<int64_t>(device.id));
    json.key("name");
    json.value(device.name);
    json.key("compute_capability");
    if (device.compute_major >= 0) {
      json.value(std::to_string(device.compute_major) + "." + std::to_string(std::max(device.compute_minor, 0)));
    } else {
      json.null();
    }
    json.key("total_memory_bytes");
    json.value(device.total_global_mem);
    json.key("sms");
    json.value(static_cast<int64_t>(device.num_sms));
    json.end_object();
  }
  json.end_array();
  json.key("steps");
  json.begin_object();
  json.key("count");
  json.value(static_cast<int64_t>(summary.step_count));
  json.key("source");
  json.value(to_string(summary.step_source));
  json.key("note");
  json.value(summary.step_note);
  json.key("steady");
  json.value(static_cast<int64_t>(summary.steady_steps));
  json.key("warmup");
  json.value(static_cast<int64_t>(summary.warmup_steps));
  json.key("last_partial");
  json.value(static_cast<int64_t>(summary.last_step_partial ? 1 : 0));
  json.key("warmup_note");
  json.value(summary.warmup_note);
  json.key("period_ms");
  json.value(summary.step_period_ms);
  json.key("median_ms");
  json.value(summary.median_step_ms);
  json.key("p90_ms");
  json.value(summary.p90_step_ms);
  json.end_object();
  json.key("span_ms");
  json.value(summary.span_ms);
  json.key("gpu_busy_pct");
  json.value(summary.gpu_busy_pct);
  json.key("compute_busy_pct");
  json.value(summary.compute_busy_pct);
  json.key("communication_pct");
  json.value(summary.communication_pct);
  json.key("copy_pct");
  json.value(summary.copy_pct);
  json.key("idle_pct");
  json.value(summary.idle_pct);
  json.key("gpu_time_ms");
  json.begin_object();
  json.key("compute");
  json.value(summary.compute_ms);
  json.key("communication");
  json.value(summary.communication_ms);
  json.key("memcpy");
  json.value(summary.memcpy_ms);
  json.key("memset");
  json.value(summary.memset_ms);
  json.key("idle");
  json.value(summary.idle_ms);
  json.end_object();
  json.key("device_shares");
  json.begin_array();
  for (const DeviceShare& share : summary.device_shares) {
    json.begin_object();
    json.key("device");
    json.value(static_cast<int64_t>(share.device));
    json.key("compute_busy_pct");
    json.value(share.compute_busy_pct);
    json.key("communication_pct");
    json.value(share.communication_pct);
    json.key("copy_pct");
    json.value(share.copy_pct);
    json.key("idle_pct");
    json.value(share.idle_pct);
    json.key("compute_ms_per_step");
    json.value(share.compute_ms);
    json.key("communication_ms_per_step");
    json.value(share.communication_ms);
    json.key("copy_ms_per_step");
    json.value(share.copy_ms);
    json.key("idle_ms_per_step");
    json.value(share.idle_ms);
    json.end_object();
  }
  json.end_array();
  json.key("kernel_family_ms_per_step");
  json.begin_object();
  for (size_t f = 0; f < kKernelFamilyCount; ++f) {
    json.key(to_string(static_cast<KernelFamily>(f)));
    json.value(summary.family_ms_per_step[f]);
  }
  json.end_object();
  json.key("idle_causes_ms");
  json.begin_object();
  for (IdleCause cause : {IdleCause::Sync, IdleCause::DataLoader, IdleCause::LaunchBound, IdleCause::CpuWork,
                          IdleCause::Untraced}) {
    json.key(to_string(cause));
    json.value(idle_ms_of(summary, cause));
  }
  json.end_object();
  json.key("kernel_count");
  json.value(summary.kernel_count);
  json.key("kernels_per_step");
  json.value(summary.kernels_per_step);
  json.key("tiny_kernel_pct");
  json.value(summary.tiny_kernel_pct);
  json.key("top_kernels");
  write_stats(json, summary.top_kernels);
  json.key("top_cpu_ops");
  write_stats(json, summary.top_cpu_ops);
  json.key("load");
  json.begin_object();
  json.key("bytes");
  json.value(static_cast<int64_t>(summary.load.bytes));
  json.key("events");
  json.value(static_cast<int64_t>(summary.load.events_seen));
  json.key("malformed_events");
  json.value(static_cast<int64_t>(summary.load.malformed_events));
  json.key("warnings");
  json.begin_array();
  for (const std::string& warning : summary.load.warnings) json.value(warning);
  json.end_array();
  json.end_object();
  json.end_object();
}

}  // namespace

std::string summary_text(const Summary& summary) {
  constexpr size_t kLabel = 14;
  std::string out = summary.path;
  if (summary.rank) out += "  (rank " + std::to_string(*summary.rank) + ")";
  out += "\n";
  auto line = [&out](const char* label, const std::string& text) { out += "  " + pad(label, kLabel) + text + "\n"; };
  if (summary.devices.empty()) {
    line("devices", "no GPU activity in the trace");
  } else {
    for (size_t d = 0; d < summary.devices.size(); ++d) {
      line(d == 0 ? (summary.devices.size() == 1 ? "device" : "devices") : "", device_line(summary.devices[d]));
    }
  }
  line("steps", std::to_string(summary.step_count) + " (" + std::string(to_string(summary.step_source)) + ": " +
                    summary.step_note + ")");
  if (summary.step_count == 0) return out;
  if (!summary.warmup_note.empty()) line("warm-up", summary.warmup_note);
  if (summary.last_step_partial) line("", "the last step was cut short by the end of profiling: left out");
  if (summary.steady_steps == 0) return out;
  line("step period", ms(summary.step_period_ms) + " mean over " + std::to_string(summary.steady_steps) +
                          " steady step" + (summary.steady_steps == 1 ? "" : "s") + ", median " +
                          ms(summary.median_step_ms) + ", p90 " + ms(summary.p90_step_ms));
  if (!summary.devices.empty()) {
    line("GPU busy", format("%.1f%%", summary.gpu_busy_pct) + " of the steady steps (kernels, copies and memsets, all devices)");
    line("GPU share", format("compute %.1f%%", summary.compute_busy_pct) +
                          format(" | communication %.1f%%", summary.communication_pct) +
                          format(" | copies %.1f%%", summary.copy_pct) + format(" | idle %.1f%%", summary.idle_pct));
    if (summary.device_shares.size() > 1) {
      for (const DeviceShare& share : summary.device_shares) {
        line("", "device " + std::to_string(share.device) + format(": compute %.1f%%", share.compute_busy_pct) +
                     format(" | communication %.1f%%", share.communication_pct) +
                     format(" | copies %.1f%%", share.copy_pct) + format(" | idle %.1f%%", share.idle_pct));
      }
    }
    std::string families;
    for (size_t f = 0; f < kKernelFamilyCount; ++f) {
      if (summary.family_ms_per_step[f] <= 0) continue;
      families += (families.empty() ? "" : " | ") + std::string(to_string(static_cast<KernelFamily>(f))) + " " +
                  ms(summary.family_ms_per_step[f]);
    }
    if (!families.empty()) line("kernel time", families + " per step (docs/KERNEL_FAMILIES.md)");
    line("GPU time", "compute " + ms(summary.compute_ms) + " | communication " + ms(summary.communication_ms) +
                         " | memcpy " + ms(summary.memcpy_ms) + " | memset " + ms(summary.memset_ms) + " | idle " +
                         ms(summary.idle_ms));
    if (!summary.idle_causes.empty()) {
      double total = 0;
      for (const IdleShare& share : summary.idle_causes) total += share.ms;
      std::string causes;
      for (const IdleShare& share : summary.idle_causes) {
        if (!causes.empty()) causes += " | ";
        causes += std::string(to_string(share.cause)) + " " + ms(share.ms) +
                  format(" (%.0f%%)", total > 0 ? 100.0 * share.ms / total : 0.0);
      }
      line("idle in steps", causes);
    }
    line("kernels", format("%.1f per step", summary.kernels_per_step) + ", " +
                        format("%.1f%%", summary.tiny_kernel_pct) + " shorter than 10 us");
  }
  stat_table(out, "top kernels", summary.top_kernels);
  stat_table(out, "top CPU ops (inclusive)", summary.top_cpu_ops);
  return out;
}

std::string summary_json(const Summary& summary, int indent) {
  JsonWriter json(indent);
  write_summary(json, summary);
  return json.text();
}

std::string summaries_json(const std::vector<Summary>& summaries, int indent) {
  JsonWriter json(indent);
  json.begin_array();
  for (const Summary& summary : summaries) write_summary(json, summary);
  json.end_array();
  return json.text();
}

}  // namespace ptadvise
