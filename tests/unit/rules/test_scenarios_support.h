// Shared by the scenario and corpus rule tests: load a trace, analyse it and run the shipped rules.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "shipped_rules.h"

namespace ptadvise::testing {

// Whether rules.d ships `id`; expectations about rules not (yet) shipped are left out.
inline bool shipped(const std::string& id) { return shipped_rules().find(id) != nullptr; }

// The expectations cover PTA101-PTA106 as reviewed with their full set (PTA101 ships with it); until then
// only PTA107 and later are compared, on both sides.
inline bool first_wave_reviewed() { return shipped("PTA101"); }
inline bool compared(const std::string& id) { return first_wave_reviewed() ? shipped(id) : id >= "PTA107"; }

inline std::multiset<std::string> shipped_only(const std::multiset<std::string>& ids) {
  std::multiset<std::string> out;
  for (const auto& id : ids) {
    if (compared(id)) out.insert(id);
  }
  return out;
}

// One checked trace. The timeline lives on the heap because the analysis points at it.
struct CheckedTrace {
  std::unique_ptr<Timeline> timeline;
  Analysis analysis;
  std::vector<Finding> findings;

  std::multiset<std::string> rule_ids() const {
    std::multiset<std::string> ids;
    for (const auto& finding : findings) ids.insert(finding.rule_id);
    return ids;
  }
  std::vector<const Finding*> of_rule(std::string_view id) const {
    std::vector<const Finding*> out;
    for (const auto& finding : findings) {
      if (finding.rule_id == id) out.push_back(&finding);
    }
    return out;
  }
};

inline CheckedTrace check_trace(const std::string& path,
                                const std::map<std::string, std::map<std::string, double>>& thresholds = {}) {
  CheckedTrace checked;
  auto loaded = load_trace_file(path);
  if (const auto* error = std::get_if<LoadError>(&loaded)) FAIL(path << " does not load: " << error->message);
  checked.timeline = std::make_unique<Timeline>(std::move(std::get<Timeline>(loaded)));
  checked.analysis = analyze(*checked.timeline);
  EvaluateOptions options;
  options.thresholds = thresholds;
  checked.findings = evaluate(shipped_rules(), checked.analysis, options);
  return checked;
}

// "PTA101 PTA102" style, for readable failure messages.
inline std::string joined(const std::multiset<std::string>& ids) {
  std::string text;
  for (const auto& id : ids) text += (text.empty() ? "" : " ") + id;
  return text.empty() ? "(none)" : text;
}

}  // namespace ptadvise::testing
