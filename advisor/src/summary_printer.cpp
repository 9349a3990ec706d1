// Renders a Summary as text or JSON. No analysis here: only formatting of the computed figures.
#include "ptadvise/summary_printer.h"

#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/schema_versions.h"

#include "format.h"
#include "json_doc.h"
#include "summary_doc.h"
#include "whatif_format.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include <cmath>
#include <string_view>

namespace ptadvise {
namespace {

// printf-style patterns of one double ("%.1f%%"), through {fmt}'s printf implementation.
std::string printf_text(const char* pattern, double value) { return fmt::sprintf(pattern, value); }

std::string shorten(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit - 3)) + "...";
}

std::string pad(const std::string& text, size_t width) { return fmt::format("{:<{}}", text, width); }

std::string pad_left(const std::string& text, size_t width) { return fmt::format("{:>{}}", text, width); }

std::string device_line(const DeviceInfo& device) {
  std::string line = "GPU " + std::to_string(device.id);
  line += ": " + (device.name.empty() ? (device.vendor.empty() ? std::string("(unnamed device)")
                                                                   : "(unnamed " + device.vendor + " device)")
                                       : format::visible(device.name));
  std::string details;
  if (device.compute_major >= 0) {
    details += "cc " + std::to_string(device.compute_major) + "." + std::to_string(std::max(device.compute_minor, 0));
    if (device.compute_inferred) details += " from kernel names";
  }
  if (device.total_global_mem > 0) {
    if (!details.empty()) details += ", ";
    details += printf_text("%.1f GiB", static_cast<double>(device.total_global_mem) / (1024.0 * 1024.0 * 1024.0));
  }
  if (device.num_sms > 0) {
    if (!details.empty()) details += ", ";
    // deviceProperties' numSms counts AMD's compute units on ROCm.
    details += std::to_string(device.num_sms) + (device.vendor == "AMD" ? " CUs" : " SMs");
  }
  if (device.properties_borrowed) details += std::string(details.empty() ? "" : "; ") + "not in deviceProperties, "
                                             "which lists only this model";
  if (!details.empty()) line += " (" + details + ")";
  return line;
}

std::string ms(double value) { return printf_text("%.3f ms", value); }

void stat_table(std::string& out, const char* title, const std::vector<KernelStat>& stats) {
  if (stats.empty()) return;
  constexpr size_t kNameWidth = 72;
  out += "\n  " + pad(title, kNameWidth + 2) + pad_left("count", 8) + pad_left("total ms", 12) + "\n";
  for (const KernelStat& stat : stats) {
    out += "    " + pad(shorten(format::visible(stat.name), kNameWidth), kNameWidth) + pad_left(std::to_string(stat.count), 8) +
           pad_left(printf_text("%.3f", static_cast<double>(stat.total_ns) / 1e6), 12) + "\n";
  }
}

double idle_ms_of(const Summary& summary, IdleCause cause) {
  for (const IdleShare& share : summary.idle_causes) {
    if (share.cause == cause) return share.ms;
  }
  return 0;
}

// Six decimals are more than any figure here needs; NaN and infinities are null.
jsondoc::Json figure(double value) { return std::isfinite(value) ? jsondoc::number(value, 6) : jsondoc::Json(nullptr); }

jsondoc::Json stats_document(const std::vector<KernelStat>& stats) {
  jsondoc::Json list = jsondoc::Json::array();
  for (const KernelStat& stat : stats) {
    list.push_back(
        {{"name", stat.name}, {"count", stat.count}, {"total_ms", figure(static_cast<double>(stat.total_ns) / 1e6)}});
  }
  return list;
}

}  // namespace

std::string summary_text(const Summary& summary, const StepPrediction* replay) {
  constexpr size_t kLabel = 14;
  std::string out = format::visible(summary.path);
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
                    format::visible(summary.step_note) + ")");
  if (summary.step_count == 0) return out;
  if (!summary.warmup_note.empty()) line("warm-up", format::visible(summary.warmup_note));
  if (summary.last_step_partial) line("", format::visible(summary.partial_note));
  if (summary.steady_steps == 0) return out;
  line("step period", ms(summary.step_period_ms) + " mean over " + std::to_string(summary.steady_steps) +
                          " steady step" + (summary.steady_steps == 1 ? "" : "s") + ", median " +
                          ms(summary.median_step_ms) + ", p90 " + ms(summary.p90_step_ms));
  if (!summary.devices.empty()) {
    line("GPU busy", printf_text("%.1f%%", summary.gpu_busy_pct) + " of the steady steps (kernels, copies and memsets, all devices)");
    line("GPU share", printf_text("compute %.1f%%", summary.compute_busy_pct) +
                          printf_text(" | communication %.1f%%", summary.communication_pct) +
                          printf_text(" | copies %.1f%%", summary.copy_pct) + printf_text(" | idle %.1f%%", summary.idle_pct));
    if (summary.device_shares.size() > 1) {
      for (const DeviceShare& share : summary.device_shares) {
        line("", "device " + std::to_string(share.device) + printf_text(": compute %.1f%%", share.compute_busy_pct) +
                     printf_text(" | communication %.1f%%", share.communication_pct) +
                     printf_text(" | copies %.1f%%", share.copy_pct) + printf_text(" | idle %.1f%%", share.idle_pct));
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
    double idle_total = 0;
    for (const IdleShare& share : summary.idle_causes) idle_total += share.ms;
    if (idle_total >= 0.0005) {  // what prints as more than 0.000 ms
      const double total = idle_total;
      std::string causes;
      for (const IdleShare& share : summary.idle_causes) {
        if (!causes.empty()) causes += " | ";
        causes += std::string(to_string(share.cause)) + " " + ms(share.ms) +
                  printf_text(" (%.0f%%)", total > 0 ? 100.0 * share.ms / total : 0.0);
      }
      line("idle in steps", causes);
    }
    line("kernels", printf_text("%.1f per step", summary.kernels_per_step) + ", " +
                        printf_text("%.1f%%", summary.tiny_kernel_pct) + " shorter than 10 us");
  }
  if (replay != nullptr) {
    const std::vector<std::string> lines = format::critical_path_lines(*replay);
    for (size_t k = 0; k < lines.size(); ++k) line(k == 0 ? "critical path" : "", lines[k]);
  }
  stat_table(out, "top kernels", summary.top_kernels);
  stat_table(out, "top CPU ops (inclusive)", summary.top_cpu_ops);
  return out;
}

jsondoc::Json summary_document(const Summary& summary) {
  using jsondoc::Json;
  Json devices = Json::array();
  for (const DeviceInfo& device : summary.devices) {
    Json capability = nullptr;
    if (device.compute_major >= 0) {
      capability = std::to_string(device.compute_major) + "." + std::to_string(std::max(device.compute_minor, 0));
    }
    devices.push_back({{"id", device.id},
                       {"name", device.name},
                       {"compute_capability", capability},
                       {"total_memory_bytes", device.total_global_mem},
                       {"sms", device.num_sms}});
  }
  Json idle_causes = Json::object();
  for (IdleCause cause : kIdleCauses) {
    idle_causes[std::string(to_string(cause))] = figure(idle_ms_of(summary, cause));
  }
  Json document;
  document["schema_version"] = kSummarySchemaVersion;
  document["path"] = summary.path;
  document["rank"] = summary.rank ? Json(*summary.rank) : Json(nullptr);
  document["devices"] = std::move(devices);
  document["steps"] = {{"count", summary.step_count},
                       {"source", to_string(summary.step_source)},
                       {"note", summary.step_note},
                       {"steady", summary.steady_steps},
                       {"warmup", summary.warmup_steps},
                       {"last_partial", summary.last_step_partial ? 1 : 0},
                       {"warmup_note", summary.warmup_note},
                       {"period_ms", figure(summary.step_period_ms)},
                       {"median_ms", figure(summary.median_step_ms)},
                       {"p90_ms", figure(summary.p90_step_ms)}};
  document["span_ms"] = figure(summary.span_ms);
  document["gpu_busy_pct"] = figure(summary.gpu_busy_pct);
  document["compute_busy_pct"] = figure(summary.compute_busy_pct);
  document["communication_pct"] = figure(summary.communication_pct);
  document["copy_pct"] = figure(summary.copy_pct);
  document["idle_pct"] = figure(summary.idle_pct);
  document["gpu_time_ms"] = {{"compute", figure(summary.compute_ms)},
                             {"communication", figure(summary.communication_ms)},
                             {"memcpy", figure(summary.memcpy_ms)},
                             {"memset", figure(summary.memset_ms)},
                             {"idle", figure(summary.idle_ms)}};
  Json device_shares = Json::array();
  for (const DeviceShare& share : summary.device_shares) {
    device_shares.push_back({{"device", share.device},
                             {"compute_busy_pct", figure(share.compute_busy_pct)},
                             {"communication_pct", figure(share.communication_pct)},
                             {"copy_pct", figure(share.copy_pct)},
                             {"idle_pct", figure(share.idle_pct)},
                             {"compute_ms_per_step", figure(share.compute_ms)},
                             {"communication_ms_per_step", figure(share.communication_ms)},
                             {"copy_ms_per_step", figure(share.copy_ms)},
                             {"idle_ms_per_step", figure(share.idle_ms)}});
  }
  document["device_shares"] = std::move(device_shares);
  Json families = Json::object();
  for (size_t f = 0; f < kKernelFamilyCount; ++f) {
    families[std::string(to_string(static_cast<KernelFamily>(f)))] = figure(summary.family_ms_per_step[f]);
  }
  document["kernel_family_ms_per_step"] = std::move(families);
  document["idle_causes_ms"] = std::move(idle_causes);
  document["kernel_count"] = summary.kernel_count;
  document["kernels_per_step"] = figure(summary.kernels_per_step);
  document["tiny_kernel_pct"] = figure(summary.tiny_kernel_pct);
  document["top_kernels"] = stats_document(summary.top_kernels);
  document["top_cpu_ops"] = stats_document(summary.top_cpu_ops);
  Json per_step = Json::array();
  for (const StepBreakdown& step : summary.steps) {
    Json idle = Json::object();
    for (IdleCause cause : kIdleCauses) {
      idle[std::string(to_string(cause))] = figure(step.idle_ms[static_cast<int>(cause)]);
    }
    per_step.push_back({{"number", step.number},
                        {"period_ms", figure(step.period_ms)},
                        {"steady", step.steady},
                        {"compute_ms", figure(step.compute_ms)},
                        {"communication_ms", figure(step.communication_ms)},
                        {"copy_ms", figure(step.copy_ms)},
                        {"idle_ms", std::move(idle)}});
  }
  document["per_step"] = std::move(per_step);
  document["load"] = {{"bytes", summary.load.bytes},
                      {"events", summary.load.events_seen},
                      {"malformed_events", summary.load.malformed_events},
                      {"warnings", summary.load.warnings}};
  return document;
}

namespace {

jsondoc::Json document_with_path(const Summary& summary, const StepPrediction* replay) {
  jsondoc::Json document = summary_document(summary);
  if (replay != nullptr) document["critical_path"] = format::critical_path_document(*replay);
  return document;
}

}  // namespace

std::string summary_json(const Summary& summary, int indent, const StepPrediction* replay) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  return jsondoc::dump(document_with_path(summary, replay), indent > 0 ? indent : -1);
}

std::string summaries_json(const std::vector<Summary>& summaries, int indent, const std::vector<StepPrediction>* replays) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  jsondoc::Json list = jsondoc::Json::array();
  for (size_t i = 0; i < summaries.size(); ++i) {
    const StepPrediction* replay = replays != nullptr && i < replays->size() ? &(*replays)[i] : nullptr;
    list.push_back(document_with_path(summaries[i], replay));
  }
  return jsondoc::dump(list, indent > 0 ? indent : -1);
}

}  // namespace ptadvise
