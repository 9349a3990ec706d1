#include "whatif_format.h"

#include <algorithm>
#include <numeric>

#include "format.h"
#include "json_doc.h"

namespace ptadvise::format {
namespace {

jsondoc::Json path_document(const std::array<double, whatif::kCategoryCount>& ms,
                            const std::vector<whatif::CriticalItem>& top) {
  using jsondoc::Json;
  using jsondoc::number;
  const double total = std::accumulate(ms.begin(), ms.end(), 0.0);
  Json per_step = Json::object(), shares = Json::object(), items = Json::array();
  for (size_t c = 0; c < ms.size(); ++c) {
    const std::string name(whatif::to_string(static_cast<whatif::Category>(c)));
    per_step[name] = number(ms[c], 3);
    shares[name] = number(total > 0 ? 100.0 * ms[c] / total : 0.0, 2);
  }
  const size_t keep = std::min<size_t>(10, top.size());
  for (size_t k = 0; k < keep; ++k) {
    items.push_back({{"name", top[k].name},
                     {"category", whatif::to_string(top[k].category)},
                     {"ms_per_step", number(top[k].ms_per_step, 3)}});
  }
  return {{"ms_per_step", std::move(per_step)}, {"share_pct", std::move(shares)}, {"top", std::move(items)}};
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

jsondoc::Json whatif_document(const StepPrediction& p) {
  using jsondoc::Json;
  using jsondoc::number;
  if (!p.available) return {{"available", false}};
  Json document;
  document["available"] = true;
  document["measured_step_ms"] = number(p.measured_step_ms, 3);
  document["replayed_step_ms"] = number(p.replayed_step_ms, 3);
  document["replayed_steps"] = p.replayed_steps;
  document["steady_steps"] = p.steady_steps;
  document["replayed_steps_measured_ms"] = number(p.window_measured_step_ms, 3);
  document["replay_note"] = p.discrepancy.empty() ? Json(nullptr) : Json(p.discrepancy);
  document["predicted_step_ms_all_fixes"] = number(p.predicted_step_ms, 3);
  document["fixes_replayed"] = p.fixes_applied;
  document["findings_ledger_only"] = p.ledger_only;
  document["critical_path"] = path_document(p.critical_ms, p.critical_top);
  document["critical_path_all_fixes"] = path_document(p.critical_ms_fixed, p.critical_top_fixed);
  return document;
}

jsondoc::Json critical_path_document(const StepPrediction& p) {
  using jsondoc::Json;
  using jsondoc::number;
  if (!p.available) return {{"available", false}};
  Json document = path_document(p.critical_ms, p.critical_top);
  document["available"] = true;
  document["replayed_steps"] = p.replayed_steps;
  document["steady_steps"] = p.steady_steps;
  document["replayed_step_ms"] = number(p.replayed_step_ms, 3);
  return document;
}

std::vector<std::string> critical_path_lines(const StepPrediction& p) {
  if (!p.available) return {"not available (no steady steps to replay)"};
  std::string steps = p.replayed_steps == p.steady_steps
                          ? std::to_string(p.steady_steps) + " steady step" + (p.steady_steps == 1 ? "" : "s")
                          : std::to_string(p.replayed_steps) + " of " + std::to_string(p.steady_steps) +
                                " steady steps (a representative window, docs/WHATIF.md)";
  std::vector<std::string> lines{critical_shares(p.critical_ms) + " of " + fixed(p.replayed_step_ms, 3) +
                                 " ms per step (replay of " + steps + ")"};
  for (size_t k = 0; k < p.critical_top.size() && k < 3; ++k) {
    const whatif::CriticalItem& item = p.critical_top[k];
    std::string name = item.name.size() > 70 ? item.name.substr(0, 67) + "..." : item.name;
    lines.push_back(fixed(item.ms_per_step, 3) + " ms " + std::string(whatif::to_string(item.category)) + ": " +
                    visible(name));
  }
  return lines;
}

std::vector<jsondoc::Json> critical_path_events(const StepPrediction& p, int64_t pid) {
  using jsondoc::Json;
  using jsondoc::number;
  std::vector<Json> events;
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", "critical path (replay)"}}}});
  for (const CriticalSpan& span : p.critical_path) {
    // The file's own time base, like the findings' markers, so the spans sit on their events.
    const double ts_us = static_cast<double>(p.origin_ns + span.start_ns) / 1000.0;
    const double dur_us = std::max(static_cast<double>(span.end_ns - span.start_ns) / 1000.0, 0.001);
    events.push_back({{"ph", "X"},
                      {"cat", "ptadvise.critical_path"},
                      {"name", span.name},
                      {"pid", pid},
                      {"tid", 0},
                      {"ts", number(ts_us, 3)},
                      {"dur", number(dur_us, 3)},
                      {"args", {{"category", whatif::to_string(span.category)}}}});
  }
  return events;
}

std::vector<std::string> whatif_headline(const StepPrediction& p) {
  std::vector<std::string> lines;
  if (!p.available) return lines;
  std::string line = "predicted step after all fixes: " + fixed(p.predicted_step_ms, 3) + " ms";
  if (p.measured_step_ms > 0) {
    line += " (" + fixed(100.0 * (p.predicted_step_ms - p.measured_step_ms) / p.measured_step_ms, 1) + "%";
    line += ", " + std::to_string(p.fixes_applied) + (p.fixes_applied == 1 ? " fix" : " fixes") + " replayed together";
    if (p.ledger_only > 0) {
      line += "; " + std::to_string(p.ledger_only) +
              (p.ledger_only == 1 ? " finding has no transform and is" : " findings have no transform and are") +
              " not in it";
    }
    if (p.per_sample_only > 0) {
      line += "; " + std::to_string(p.per_sample_only) +
              (p.per_sample_only == 1 ? " batch-size fix is" : " batch-size fixes are") + " predicted per sample, not in it";
    }
    line += ")";
  }
  lines.push_back(line);
  std::string path = "critical path: " + critical_shares(p.critical_ms);
  if (p.replayed_steps < p.steady_steps) {
    // A representative window: its measured mean against the trace's is the sampling error.
    path += " (replay of " + std::to_string(p.replayed_steps) + " of " + std::to_string(p.steady_steps) +
            " steady steps, measured " + fixed(p.window_measured_step_ms, 3) + " ms per step)";
  }
  lines.push_back(path);
  if (!p.discrepancy.empty()) lines.push_back("replay: " + p.discrepancy);
  return lines;
}

}  // namespace ptadvise::format
