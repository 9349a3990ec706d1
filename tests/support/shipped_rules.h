// The rules of the source tree's rules.d, for tests that run them.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "ptadvise/rules.h"

namespace ptadvise::testing {

// Loaded once; a rules.d that does not load fails the test.
inline const RuleSet& shipped_rules() {
  static const std::variant<RuleSet, RuleError> loaded = load_rules({std::string(PTADVISE_SOURCE_DIR) + "/rules.d"});
  if (const auto* error = std::get_if<RuleError>(&loaded)) FAIL("rules.d does not load: " << error->message);
  return std::get<RuleSet>(loaded);
}

}  // namespace ptadvise::testing
