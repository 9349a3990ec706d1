// Rules as data: loading and validating rules.d/*.yaml, evaluating them on an analysed timeline.
// The rule language is documented in docs/RULE_LANGUAGE.md.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/finding.h"
#include "ptadvise/whatif.h"

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

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean" messages.
size_t edit_distance(std::string_view a, std::string_view b);

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
  // The args keys the rules read (`args:` predicates, `max_arg` metrics), for LoadOptions::arg_keys together
  // with kept_arg_keys() (timeline.h).
  ArgKeySet arg_keys() const;
  // The fixtures declared by infos()[index].
  const std::vector<RuleTest>& tests(size_t index) const;

 private:
  friend std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>&);
  friend std::variant<RuleSet, RuleError> load_rule_text(std::string_view, const std::string&);
  friend std::vector<Finding> evaluate(const RuleSet&, const Analysis&, const EvaluateOptions&, Coverage*);
  std::vector<RuleInfo> infos_;
  std::vector<std::shared_ptr<const CompiledRule>> compiled_;  // shared with the loader's cache of rule files
};

// Loads every *.yaml below each directory (recursively, files in path order), directory by directory;
// ids and names must be unique across all of them.
std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>& directories);

// True for a rule file with a top-level `scope: job` line: a job rule, loaded and run by job/ over the ranks
// of a distributed job (docs/RULE_LANGUAGE.md "Job scope"); load_rules() leaves such files out.
bool is_job_rule(std::string_view yaml);

// One file of a rule directory, read whole.
struct RuleFile {
  std::string path;
  std::string text;
};
// Every *.yaml / *.yml below `directory` (recursively, in path order), each read with the bound of
// kMaxSmallFileBytes. Symlinked directories are followed, each real directory once: a link back to an
// ancestor cannot make the walk endless. Both rule loaders (per trace and job scope) read through this.
std::variant<std::vector<RuleFile>, RuleError> read_rule_files(const std::string& directory);

// Validates and compiles one rule file given as text; `file` names it in messages and anchors the
// relative fixture paths of its `tests:` section. Used by tests and the fuzzer.
std::variant<RuleSet, RuleError> load_rule_text(std::string_view yaml, const std::string& file);

// Per-rule threshold and severity overrides from the configuration.
struct EvaluateOptions {
  std::vector<std::string> only;  // rule ids/names/tags to run; empty = all
  std::vector<std::string> skip;  // rule ids/names/tags to skip
  std::map<std::string, std::map<std::string, double>> thresholds;  // rule id -> threshold -> value
  std::map<std::string, Severity> severities;                         // rule id -> severity
  // Fill each finding's predicted step by replay (predict_findings). `check` turns it off and predicts
  // once per trace after suppressions, with the graph it also uses for the trace's replay (WhatIf).
  bool predict = true;
  // Threads the rules' selections are made on (0: one per core this process may run on). The findings are
  // the same on any number; `check` gives each trace the cores its loader had.
  unsigned threads = 1;
};

// Runs the rules on one analysed trace. Findings come in rule order, each rule's findings ranked by
// estimated saving. GPU idle time is taken from Analysis::idle, and each gap of the ledger is claimed by
// at most one finding (Finding::idle_gaps lists the gaps a finding claimed).
// Rules whose needs (RuleInfo::needs) the trace cannot meet are not run; `coverage`, when given, counts them.
std::vector<Finding> evaluate(const RuleSet& rules, const Analysis& analysis, const EvaluateOptions& options = {},
                              Coverage* coverage = nullptr);

// ---- what-if (docs/WHATIF.md) --------------------------------------------------------------------

// A piece of a step's critical path in trace time, for drawing (the unchanged replay's times).
struct CriticalSpan {
  std::string name;
  whatif::Category category = whatif::Category::Host;
  uint32_t step = kNone;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct StepPrediction {
  bool available = false;            // the trace has steady steps to replay
  double measured_step_ms = 0;       // Analysis::step_period_ns
  double replayed_step_ms = 0;       // the unchanged graph replayed (its replayed steps)
  double predicted_step_ms = 0;      // with the fixes of the given findings, all together
  size_t fixes_applied = 0;          // findings whose transform is in that replay
  size_t ledger_only = 0;            // findings without a transform (not in the replay)
  size_t per_sample_only = 0;        // batch-size fixes: predicted per sample, not in the replay
  // The steps replayed: every steady step, or a representative window of them (whatif::StepWindow).
  size_t replayed_steps = 0, steady_steps = 0;
  uint32_t first_replayed_step = kNone;  // index into Analysis::steps
  double window_measured_step_ms = 0;    // measured mean period of the replayed steps
  std::string discrepancy;           // why replayed and measured differ by more than 3%; empty when they agree
  std::array<double, whatif::kCategoryCount> critical_ms{};        // per step, unchanged
  std::array<double, whatif::kCategoryCount> critical_ms_fixed{};  // per step, with the fixes
  std::vector<whatif::CriticalItem> critical_top;        // unchanged, largest first
  std::vector<whatif::CriticalItem> critical_top_fixed;  // with the fixes
  std::vector<CriticalSpan> critical_path;               // unchanged, replayed steps
  int64_t origin_ns = 0;  // Timeline::file_origin_ns: span times + this are the file's own ts
};

// The what-if of one trace: its step graph, built once over the replay window (whatif::replay_window),
// and the unchanged replay, shared by every prediction for the trace. Cost: one graph, one replay per
// finding with a transform, one replay of all fixes, each linear in the events of the replayed steps.
class WhatIf {
 public:
  explicit WhatIf(const Analysis& analysis);
  bool available() const { return available_; }

  // Fills predicted_step_ms of every finding. A finding whose rule declares a transform: the replay with
  // its fix alone; its saving becomes min(ledger claim, what that replay takes off the step), so no
  // nanosecond counts twice and only what shortens the step counts (saving_basis "ledger+replay"). Others:
  // the period minus the claim ("ledger").
  void predict_findings(std::vector<Finding>& findings) const;

  // Measured vs replayed step, the critical path, and the step predicted with the transforms of
  // `findings` applied together (each transform once: no double counting by construction).
  // `fixed_replay`, when given, receives the replay of those transforms together (the unchanged replay,
  // base(), when there are none). `with_spans` fills StepPrediction::critical_path, each piece with its
  // event's name: only the annotated trace shows them (`check --annotate`), and on a trace of 200k events
  // they were 45 MB.
  StepPrediction predict_steps(const std::vector<Finding>& findings, whatif::ReplayResult* fixed_replay = nullptr,
                               bool with_spans = false) const;

  // The step graph the predictions replay (its window: whatif::replay_window).
  const whatif::Graph& graph() const { return graph_; }
  // The unchanged replay of that graph.
  const whatif::ReplayResult& base() const { return base_; }

 private:
  const Analysis& analysis_;
  bool available_ = false;
  whatif::Graph graph_;
  whatif::ReplayResult base_;
};

// Whether predict_steps replays the finding's fix with the others: its rule declares a transform that
// keeps the step's batch (a batch-size fix is predicted per sample, alone).
bool in_all_fixes_replay(const Finding& finding);
// The fixes predict_steps replays together for `findings`.
std::vector<whatif::Fix> all_fixes(const std::vector<Finding>& findings);

// The same, each with a WhatIf of its own (one graph per call). evaluate() calls predict_findings unless
// EvaluateOptions::predict is off.
void predict_findings(const Analysis& analysis, std::vector<Finding>& findings);
StepPrediction predict_steps(const Analysis& analysis, const std::vector<Finding>& findings);

// Without the what-if (`check --no-whatif`): every finding's predicted step is the period minus its
// saving (saving_basis "ledger").
void predict_from_ledger(const Analysis& analysis, std::vector<Finding>& findings);

// The directory of rules shipped with ptadvise: $PTADVISE_RULES_DIR, else data_directory()/rules.d
// (ptadvise/data_directory.h: share/ptadvise beside the executable, or the build tree's links).
std::string default_rules_directory();

}  // namespace ptadvise
