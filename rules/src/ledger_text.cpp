#include "ledger_text.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace ptadvise {

std::vector<uint8_t> charged_culprits(const Analysis& analysis, uint32_t causes) {
  std::vector<uint8_t> charged(analysis.timeline != nullptr ? analysis.timeline->events.size() : 0, 0);
  for (const IdleGap& gap : analysis.idle) {
    if (((causes >> static_cast<unsigned>(gap.cause)) & 1u) == 0 || !analysis.is_steady(gap.step)) continue;
    if (gap.culprit < charged.size()) charged[gap.culprit] = 1;
  }
  return charged;
}

std::string culprit_breakdown(const Analysis& analysis, const std::vector<uint32_t>& gaps, double steps, size_t top,
                              std::string (*format)(double)) {
  // Summed per interned name first (kNone: no culprit), so names are compared once per name, not per gap.
  std::unordered_map<StringId, int64_t> by_name_id;
  for (uint32_t k : gaps) {
    const IdleGap& gap = analysis.idle[k];
    by_name_id[gap.culprit != kNone ? analysis.timeline->events.name[gap.culprit] : kNone] += gap.duration_ns();
  }
  std::map<std::string_view, int64_t> by_name;
  for (const auto& [id, ns] : by_name_id) {
    by_name[id != kNone ? analysis.timeline->strings.view(id) : std::string_view("(nothing recorded)")] += ns;
  }
  std::vector<std::pair<int64_t, std::string_view>> order;
  for (const auto& [name, ns] : by_name) order.emplace_back(ns, name);
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  std::string text;
  for (size_t n = 0; n < order.size() && n < top; ++n) {
    if (!text.empty()) text += ", ";
    text += std::string(order[n].second) + " " + format(static_cast<double>(order[n].first) / steps / 1e6) + " ms/step";
  }
  return text.empty() ? "none" : text;
}

bool has_call_stacks(const Timeline& timeline) {
  // A trace recorded with stacks has them on every op with Python above it: a few thousand ops decide.
  constexpr size_t kOpsChecked = 4096;
  size_t checked = 0;
  const Events& events = timeline.events;
  for (EventIndex e = 0; e < events.size() && checked < kOpsChecked; ++e) {
    if (events.kind[e] != EventKind::CpuOp || events.args_length[e] == 0) continue;
    ++checked;
    if (auto stack = timeline.arg_string(e, "Call stack"); stack && !stack->empty()) return true;
  }
  return false;
}

}  // namespace ptadvise
