// Guards against YAML documents that are small on disk but huge once aliases are followed ("billion
// laughs": ten aliases of ten aliases of ...). yaml-cpp shares aliased nodes, so loading is cheap, but any
// walk of the document (compiling a rule's nested conditions, reading a config) visits the expansion.
// Header-only: include it only from code that links yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>

namespace ptadvise {

// Nodes a configuration, baseline or rule document may expand to, and how deep it may nest. Real
// documents have a few thousand nodes and nest a dozen levels.
inline constexpr size_t kMaxYamlNodes = 1'000'000;
inline constexpr size_t kMaxYamlDepth = 64;

namespace detail {
inline bool within_yaml_budget(const YAML::Node& node, size_t depth, size_t& budget) {
  if (budget == 0 || depth > kMaxYamlDepth) return false;
  --budget;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!within_yaml_budget(item, depth + 1, budget)) return false;
    }
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!within_yaml_budget(entry.first, depth + 1, budget)) return false;
      if (!within_yaml_budget(entry.second, depth + 1, budget)) return false;
    }
  }
  return true;
}
}  // namespace detail

// True when the document, aliases expanded, stays within kMaxYamlNodes nodes and kMaxYamlDepth levels.
// Costs at most kMaxYamlNodes steps whatever the document.
inline bool yaml_within_budget(const YAML::Node& root) {
  size_t budget = kMaxYamlNodes;
  return detail::within_yaml_budget(root, 0, budget);
}

inline const char* yaml_budget_message() {
  return "the document expands to more than 1,000,000 nodes or nests deeper than 64 levels (an alias bomb?)";
}

}  // namespace ptadvise
