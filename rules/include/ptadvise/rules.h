// Rules as data: loading and validating rules.d/*.yaml, evaluating them on an analysed timeline.
// The rule language is documented in docs/RULE_LANGUAGE.md.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/finding.h"

namespace ptadvise {

struct RuleError {
  std::string message;  // one line: file:line:column: key: what was expected
};

// One fixture of a rule's `tests:` section: a trace and the findings the rule must report on it.
struct RuleTestFinding {
  std::string op;      // expected Finding::site.op (empty: not checked)
  std::string kernel;  // expected Finding::site.kernel (empty: not checked)
  std::string message_contains;
  // Finding fields by name (count_per_step, time_ms_per_step, steps_present_pct, saving_ms_per_step,
  // saving_pct) -> expected value, compared with a relative tolerance of 1%.
  std::vector<std::pair<std::string, double>> numbers;
};
struct RuleTest {
  std::string trace;  // absolute path (resolved against the rule file's directory)
  size_t findings = 0;  // exact number of findings this rule reports on the trace
  std::vector<RuleTestFinding> expect;  // checked in order against the findings ranked by saving
  std::map<std::string, double> thresholds;  // threshold overrides for this fixture (e.g. the noise floor)
};

struct CompiledRule;  // private to rules/

struct EvaluateOptions;

class RuleSet {
 public:
  RuleSet();
  ~RuleSet();
  RuleSet(RuleSet&&) noexcept;
  RuleSet& operator=(RuleSet&&) noexcept;

  const std::vector<RuleInfo>& infos() const { return infos_; }
  // By id (PTA101) or name (h2d-copy-every-step), case-insensitive; nullptr when absent.
  const RuleInfo* find(std::string_view id_or_name) const;
  // The id or name closest to `text` (edit distance), for "did you mean" messages; empty when none.
  std::string closest(std::string_view text) const;
  // The fixtures declared by infos()[index].
  const std::vector<RuleTest>& tests(size_t index) const;

 private:
  friend std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>&);
  friend std::variant<RuleSet, RuleError> load_rule_text(std::string_view, const std::string&);
  friend std::vector<Finding> evaluate(const RuleSet&, const Analysis&, const EvaluateOptions&, Coverage*);
  std::vector<RuleInfo> infos_;
  std::vector<std::unique_ptr<CompiledRule>> compiled_;
};

// Loads every *.yaml below each directory (recursively, files in path order), directory by directory;
// ids and names must be unique across all of them.
std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>& directories);

// True for a rule file with a top-level `scope: job` line: a job rule, loaded and run by job/ over the ranks
// of a distributed job (docs/RULE_LANGUAGE.md "Job scope"); load_rules() leaves such files out.
bool is_job_rule(std::string_view yaml);

// Validates and compiles one rule file given as text; `file` names it in messages and anchors the
// relative fixture paths of its `tests:` section. Used by tests and the fuzzer.
std::variant<RuleSet, RuleError> load_rule_text(std::string_view yaml, const std::string& file);

// Per-rule threshold and severity overrides from the configuration.
struct EvaluateOptions {
  std::vector<std::string> only;  // rule ids/names/tags to run; empty = all
  std::vector<std::string> skip;  // rule ids/names/tags to skip
  std::map<std::string, std::map<std::string, double>> thresholds;  // rule id -> threshold -> value
  std::map<std::string, Severity> severities;                         // rule id -> severity
};

// Runs the rules on one analysed trace. Findings come in rule order, each rule's findings ranked by
// estimated saving. GPU idle time is taken from Analysis::idle, and each gap of the ledger is claimed by
// at most one finding (Finding::idle_gaps lists the gaps a finding claimed).
// Rules whose needs (RuleInfo::needs) the trace cannot meet are not run; `coverage`, when given, counts them.
std::vector<Finding> evaluate(const RuleSet& rules, const Analysis& analysis, const EvaluateOptions& options = {},
                              Coverage* coverage = nullptr);

// The directory of rules shipped with ptadvise: $PTADVISE_RULES_DIR, else <exe dir>/../share/ptadvise/rules.d
// when it exists, else the source tree's rules.d.
std::string default_rules_directory();

}  // namespace ptadvise
