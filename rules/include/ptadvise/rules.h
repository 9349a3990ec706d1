// Rules as data: loading and validating rules.d/*.yaml, evaluating them on an analysed timeline.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/finding.h"

namespace ptadvise {

struct RuleError {
  std::string message;  // one line: file:line:column: key: what was expected
};

struct CompiledRule;  // private to rules/

class RuleSet {
 public:
  RuleSet();
  ~RuleSet();
  RuleSet(RuleSet&&) noexcept;
  RuleSet& operator=(RuleSet&&) noexcept;

  const std::vector<RuleInfo>& infos() const { return infos_; }
  const RuleInfo* find(std::string_view id_or_name) const;

 private:
  friend std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>&);
  friend std::vector<Finding> evaluate(const RuleSet&, const Analysis&, const struct EvaluateOptions&);
  std::vector<RuleInfo> infos_;
  std::vector<std::unique_ptr<CompiledRule>> compiled_;
};

// Loads every *.yaml below each directory (recursively), in order; ids and names must be unique.
std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>& directories);

// Per-rule threshold and severity overrides from the configuration.
struct EvaluateOptions {
  std::vector<std::string> only;  // rule ids/names/tags to run; empty = all
  std::vector<std::string> skip;  // rule ids/names/tags to skip
  std::map<std::string, std::map<std::string, double>> thresholds;  // rule id -> threshold -> value
  std::map<std::string, Severity> severities;                         // rule id -> severity
};

std::vector<Finding> evaluate(const RuleSet& rules, const Analysis& analysis, const EvaluateOptions& options = {});

// The directory of rules shipped with ptadvise (installed or in the source tree).
std::string default_rules_directory();

}  // namespace ptadvise
