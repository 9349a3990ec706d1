#include "whatif_format.h"

#include <algorithm>
#include <numeric>

#include "format.h"

namespace ptadvise::format {
namespace {

std::string path_json(const std::array<double, whatif::kCategoryCount>& ms, const std::vector<whatif::CriticalItem>& top,
                      const std::string& in) {
  const double total = std::accumulate(ms.begin(), ms.end(), 0.0);
  std::string out = "{\n" + in + "  \"ms_per_step\": {";
  for (size_t c = 0; c < ms.size(); ++c) {
    out += (c ? ", " : "") + jstr(whatif::to_string(static_cast<whatif::Category>(c))) + ": " + fixed(ms[c], 3);
  }
  out += "},\n" + in + "  \"share_pct\": {";
  for (size_t c = 0; c < ms.size(); ++c) {
    out += (c ? ", " : "") + jstr(whatif::to_string(static_cast<whatif::Category>(c))) + ": " +
           fixed(total > 0 ? 100.0 * ms[c] / total : 0.0, 2);
  }
  out += "},\n" + in + "  \"top\": [";
  const size_t keep = std::min<size_t>(10, top.size());
  for (size_t k = 0; k < keep; ++k) {
    out += (k ? ",\n" : "\n") + in + "    {\"name\": " + jstr(top[k].name) + ", \"category\": " +
           jstr(whatif::to_string(top[k].category)) + ", \"ms_per_step\": " + fixed(top[k].ms_per_step, 3) + "}";
  }
  out += keep ? "\n" + in + "  ]\n" + in + "}" : "]\n" + in + "}";
  return out;
}

}  // namespace

std::string critical_shares(const std::array<double, whatif::kCategoryCount>& ms) {
  const double total = std::accumulate(ms.begin(), ms.end(), 0.0);
  std::vector<size_t> order(ms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&ms](size_t a, size_t b) { return ms[a] > ms[b]; });
  std::string text;
  for (size_t c : order) {
    if (total <= 0 || 100.0 * ms[c] / total < 0.05) continue;
    text += (text.empty() ? "" : ", ") + std::string(whatif::to_string(static_cast<whatif::Category>(c))) + " " +
            fixed(100.0 * ms[c] / total, 1) + "%";
  }
  return text.empty() ? "none" : text;
}

std::string critical_path_events(const StepPrediction& p, const std::string& pid) {
  std::string out = "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid +
                    ", \"tid\": 0, \"args\": {\"name\": \"critical path (replay)\"}}";
  for (const CriticalSpan& span : p.critical_path) {
    const double ts_us = static_cast<double>(p.origin_ns + span.start_ns) / 1000.0;
    const double dur_us = std::max(static_cast<double>(span.end_ns - span.start_ns) / 1000.0, 0.001);
    out += ",\n{\"ph\": \"X\", \"cat\": \"ptadvise.critical_path\", \"name\": " + jstr(span.name) + ", \"pid\": " +
           pid + ", \"tid\": 0, \"ts\": " + fixed(ts_us, 3) + ", \"dur\": " + fixed(dur_us, 3) +
           ", \"args\": {\"category\": " + jstr(whatif::to_string(span.category)) + "}}";
  }
  return out;
}

std::string whatif_json(const StepPrediction& p, const std::string& in) {
  if (!p.available) return "{\"available\": false}";
  std::string out = "{\n";
  out += in + "  \"available\": true,\n";
  out += in + "  \"measured_step_ms\": " + fixed(p.measured_step_ms, 3) + ",\n";
  out += in + "  \"replayed_step_ms\": " + fixed(p.replayed_step_ms, 3) + ",\n";
  out += in + "  \"replay_note\": " + (p.discrepancy.empty() ? std::string("null") : jstr(p.discrepancy)) + ",\n";
  out += in + "  \"predicted_step_ms_all_fixes\": " + fixed(p.predicted_step_ms, 3) + ",\n";
  out += in + "  \"fixes_replayed\": " + std::to_string(p.fixes_applied) + ",\n";
  out += in + "  \"findings_ledger_only\": " + std::to_string(p.ledger_only) + ",\n";
  out += in + "  \"critical_path\": " + path_json(p.critical_ms, p.critical_top, in + "  ") + ",\n";
  out += in + "  \"critical_path_all_fixes\": " + path_json(p.critical_ms_fixed, p.critical_top_fixed, in + "  ") + "\n";
  out += in + "}";
  return out;
}

std::vector<std::string> whatif_headline(const StepPrediction& p) {
  std::vector<std::string> lines;
  if (!p.available) return lines;
  std::string line = "predicted step after all fixes: " + fixed(p.predicted_step_ms, 3) + " ms";
  if (p.measured_step_ms > 0) {
    line += " (" + fixed(100.0 * (p.predicted_step_ms - p.measured_step_ms) / p.measured_step_ms, 1) + "%";
    line += ", " + std::to_string(p.fixes_applied) + (p.fixes_applied == 1 ? " fix" : " fixes") + " replayed together";
    if (p.ledger_only > 0) {
      line += "; " + std::to_string(p.ledger_only) + (p.ledger_only == 1 ? " finding has" : " findings have") +
              " no transform and are not in it";
    }
    line += ")";
  }
  lines.push_back(line);
  lines.push_back("critical path: " + critical_shares(p.critical_ms));
  if (!p.discrepancy.empty()) lines.push_back("replay: " + p.discrepancy);
  return lines;
}

}  // namespace ptadvise::format
