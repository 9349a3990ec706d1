// The `transform:` section of a rule file: the fix as what-if graph transforms (docs/RULE_LANGUAGE.md).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "ptadvise/whatif.h"

namespace ptadvise {

struct RuleTransform {
  std::vector<whatif::TransformSpec> steps;  // applied together to each finding's events
  std::vector<std::string> selections;       // per step: the selection whose events it takes (empty: the group's)
  std::string method;                        // how the fix changes the step, phrased for the user
  bool declared() const { return !steps.empty(); }
};

struct TransformError {
  YAML::Mark mark;
  std::string key;
  std::string what;
};

// Parses `transform: {apply: [{primitive: {param: value}}...], method: text}`.
std::optional<TransformError> parse_transform(const YAML::Node& node, RuleTransform& out);

// "background (4 workers, 2 batches prefetched each)", "scale (pinned_copy table), make_async", ...
std::string describe_transform(const RuleTransform& transform);

}  // namespace ptadvise
