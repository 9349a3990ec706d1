// "file:line:column" of a YAML node, for one-line errors about configs, baselines and rule files.
// Header-only: include it only from code that links yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace ptadvise {

// The label alone when yaml-cpp has no position (a node built in memory, or the document's end).
inline std::string yaml_where(const std::string& label, const YAML::Mark& mark) {
  if (mark.line < 0) return label;
  return label + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace ptadvise
