// From raw findings to advice: impact ranking, fingerprints, configuration, suppressions, baselines,
// the annotated trace and the printers (text, json, sarif, github, junit, markdown, html). Printers only format.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/finding.h"
#include "ptadvise/job.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"

namespace ptadvise {

// ---------------------------------------------------------------------------------------------------
// Identity

// Stable identity of a finding: rule id + normalised site (op, GPU op, op chain, source file and
// function); never timestamps, pids, correlation ids, durations or line numbers. 16 hex digits.
std::string fingerprint(const Finding& finding);

// Replaces the parts of an event name that change between recordings of the same program with `N`:
// instance suffixes (`NLLLoss_3`), step numbers (`ProfilerStep#12`), hex addresses (`0x7f3a…`).
// Digits that are part of a name (`sm80_xmma_gemm_128x64`, `conv2d`) are kept.
std::string normalize_name(std::string_view name);

// One-line description of where a finding is, for humans and baselines:
// "train.py:42 in train_step (aten::_local_scalar_dense)" or the op chain when there is no source.
std::string describe_site(const Site& site);

// ---------------------------------------------------------------------------------------------------
// Ranking and totals

// Ranks findings by estimated saving (descending); ties by severity (error first), then rule id, then
// site. Fills `fingerprint` (made unique within the list with a `-2`, `-3`… suffix, in rank order, when
// one site holds several findings of a rule) and `rank` (1-based).
void rank_findings(std::vector<Finding>& findings);

// What all findings of one trace can give back per step: the sum of their savings. The rules engine's
// claims make it a sum of disjoint parts of the step (each idle gap and each GPU op claimed by one finding,
// GPU-time savings within what faster GPU work can take off the step, all within the step period), so it
// is shown as it is, never capped; `step_ms` is kept for callers and unused.
double recoverable_ms_per_step(const std::vector<Finding>& findings, double step_ms);

// ---------------------------------------------------------------------------------------------------
// Configuration (.ptadvise.yaml)

struct ConfigError {
  std::string message;  // one line: file:line:column: what was expected
};

struct RuleOverride {
  std::string rule;  // id or name as written
  int line = 0;      // position in the config file, for messages
  int column = 0;
  std::optional<Severity> severity;
  std::map<std::string, double> thresholds;
};

struct Config {
  std::string path;  // file it came from; empty = defaults
  std::vector<std::string> select;         // ids, names or tags; empty = all rules
  std::vector<std::string> extend_select;  // added to `select`
  std::vector<std::string> ignore;         // removed after selection
  std::vector<RuleOverride> rules;         // per-rule severity and thresholds
  std::vector<std::string> rule_directories;  // extra rule directories, resolved against the file's folder
  std::vector<std::string> kernel_families;   // kernel family tables tried before the shipped one (same)
  std::optional<Severity> fail_on;
  std::optional<std::string> source_root;  // resolved against the file's folder
  std::optional<std::string> baseline;     // resolved against the file's folder
  // "file:line:column" of each selector as written ("select\x1fPTA101" -> "cfg.yaml:2:10"), for messages.
  std::map<std::string, std::string> positions;
};

// Parses a configuration file; unknown keys and wrong types are errors naming line and column.
std::variant<Config, ConfigError> load_config(const std::string& path);
std::variant<Config, ConfigError> parse_config(const std::string& yaml_text, const std::string& label,
                                               const std::string& base_directory);

// `.ptadvise.yaml` in `start_directory` or the nearest parent that has one; empty when none.
std::string find_config(const std::string& start_directory);

// Rule ids selected by the configuration (and CLI selectors merged into it), with overrides resolved
// to rule ids. Errors for selectors or override keys that name no rule, name or tag.
std::variant<EvaluateOptions, ConfigError> resolve_selection(const Config& config, const RuleSet& rules);
// The same with the job rules (rules.d/job/) selectable and configurable like the others.
std::variant<EvaluateOptions, ConfigError> resolve_selection(const Config& config, const RuleSet& rules,
                                                             const std::vector<RuleInfo>& job_rules);

// The effective configuration as YAML (for --show-config).
void print_config(const Config& config, std::ostream& out);

// The rules a run uses: the shipped directory (default_rules_directory()) plus `extra_directories`.
// Fails closed: a load error, or no rule file at all (an empty or wrong rule directory), is a ConfigError,
// so that a gate never passes because nothing was checked.
std::variant<RuleSet, ConfigError> load_rule_set(const std::vector<std::string>& extra_directories);

struct SelectedRules {
  RuleSet rules;
  EvaluateOptions selection;
  size_t selected_count = 0;  // rules left after select/extend-select/ignore
};
// load_rule_set(config.rule_directories) and resolve_selection(config); also a ConfigError when the
// selection leaves no rule to run.
// `job_rules`: the job-scope rules (job/), selectable by the same configuration.
std::variant<SelectedRules, ConfigError> load_selected_rules(const Config& config,
                                                             const std::vector<RuleInfo>& job_rules = {});

// ---------------------------------------------------------------------------------------------------
// Inline suppressions: `# ptadvise: ignore[PTA101, item-sync-in-step]` or a bare `# ptadvise: ignore`
// on the Python line a finding points to.

// True when `line` carries a suppression comment that covers the rule (by id or name).
bool line_suppresses(std::string_view line, std::string_view rule_id, std::string_view rule_name);

// Finds a finding's source file on this machine: as written when it exists (relative paths against
// `source_root`), else the longest tail of its path that exists below `source_root` (traces recorded in
// another checkout or container). Empty when not found.
std::string locate_source(const std::string& file, const std::string& source_root);

// Removes the findings suppressed in their source file (relative paths are resolved against
// `source_root`; unreadable files suppress nothing). Returns how many were removed.
size_t apply_suppressions(std::vector<Finding>& findings, const std::string& source_root);

// ---------------------------------------------------------------------------------------------------
// Baselines: accepted findings, by fingerprint.

struct BaselineEntry {
  std::string fingerprint;
  std::string rule_id;
  std::string rule_name;
  std::string site;  // describe_site()
  double saving_ms_per_step = 0;
};

struct Baseline {
  std::string path;
  std::vector<BaselineEntry> entries;  // sorted by (rule id, site, fingerprint)
};

std::variant<Baseline, ConfigError> load_baseline(const std::string& path);
std::variant<Baseline, ConfigError> parse_baseline(const std::string& yaml_text, const std::string& label);
// Entries of all findings (one per fingerprint), sorted.
Baseline make_baseline(const std::vector<Finding>& findings);
void write_baseline(const Baseline& baseline, std::ostream& out);

struct BaselineMatch {
  std::vector<bool> in_baseline;      // per finding
  std::vector<BaselineEntry> stale;   // entries that matched no finding
};
BaselineMatch match_baseline(const Baseline& baseline, const std::vector<Finding>& findings);

// ---------------------------------------------------------------------------------------------------
// The report of one `check` run, as the printers see it.

// The ranks of one distributed job side by side (docs/DISTRIBUTED.md), for the job's section of the report.
struct JobRankRow {
  int rank = -1;
  std::string path;
  double step_ms = 0;
  double compute_ms = 0;          // per step
  double communication_ms = 0;
  double exposed_comm_ms = 0;     // communication with no compute running
  double overlap_pct = 0;         // share of communication overlapped by compute
  double wait_ms = 0;             // inside collectives, before the last rank arrived
  double data_loader_ms = 0;
  double idle_ms = 0;             // GPU idle (0 on host-only traces)
  double last_pct = 0;            // % of collectives at which it arrived last
};
struct JobSkew {                  // one of the collectives with the largest arrival skew
  std::string collective;         // "all_reduce" (+ " group NAME")
  int64_t step = -1;
  uint32_t order = 0;
  double skew_ms = 0;
  int last_rank = -1;
  double wait_ms = 0;             // the other ranks' wait in it, summed
};
struct JobTable {
  std::string directory;
  size_t ranks = 0;
  int world_size = 1;
  std::string backend;
  size_t aligned_collectives = 0;
  size_t unmatched_collectives = 0;
  size_t uncompared_steps = 0;  // steps left out of the wait statistics (JobAnalysis)
  bool by_sequence = false;
  double compute_imbalance_pct = 0;
  size_t folded_findings = 0;     // per-rank findings shown once here because every rank has them
  std::vector<JobRankRow> rows;
  std::vector<JobSkew> worst;     // up to 5, largest skew first
  JobPrediction prediction;       // the ranks replayed joined at their collectives
};

struct TraceReport {
  std::string path;
  std::optional<int> rank;
  std::string device;          // e.g. "NVIDIA A100-SXM4-80GB", empty when unknown
  size_t step_count = 0;
  std::string step_note;       // how steps were found
  double step_ms = 0;          // mean period of the steady steps (Summary::step_period_ms)
  double gpu_busy_pct = 0;
  bool has_gpu = false;        // the trace has GPU activity
  double recoverable_ms = 0;   // per step, counted once (recoverable_ms_per_step)
  std::vector<std::string> warnings;  // load warnings, already phrased
  std::vector<Finding> findings;      // ranked
  std::vector<bool> new_finding;      // per finding: not in the baseline (all true without one)
  Coverage coverage;                  // which rules could check this trace
  StepPrediction prediction;          // what-if: replayed step, critical path, step after all fixes
  std::optional<Summary> summary;
  // Set on the entry that stands for a distributed job (placed before its ranks): its findings are the
  // job rules' and the per-rank findings every rank shares ("on all N ranks").
  std::optional<JobTable> job;
};

struct Report {
  std::string tool_version;
  std::vector<TraceReport> traces;
  std::vector<RuleInfo> rules;  // the rules that ran
  Severity fail_on = Severity::Warning;
  bool has_baseline = false;
  std::vector<BaselineEntry> stale;  // baseline entries that no longer occur
  size_t suppressed = 0;             // findings removed by inline comments
  std::string source_root;           // for repo-relative paths in SARIF/GitHub output

  // Findings that make the run fail: at or above fail_on and not in the baseline.
  size_t failing_count() const;
  size_t finding_count() const;
};

bool is_failing(const Report& report, const TraceReport& trace, size_t finding_index);

// ---------------------------------------------------------------------------------------------------
// Printers

enum class OutputFormat { Text, Json, Sarif, Github, Junit, Markdown, Html };
std::optional<OutputFormat> parse_output_format(std::string_view text);
std::string_view to_string(OutputFormat format);

// How much the text report says: Concise is one line per finding (like ruff's concise mode), Default at
// most four, Verbose every evidence item and the estimate's method.
enum class TextDetail { Concise, Default, Verbose };

struct PrintOptions {
  bool color = false;
  TextDetail detail = TextDetail::Default;
  size_t width = 80;                   // text lines are wrapped to this many columns (never truncated)
  size_t github_limit_per_level = 10;  // GitHub shows at most 10 annotations of each level per step
};

void print_report(const Report& report, OutputFormat format, std::ostream& out, const PrintOptions& options = {});
void print_text(const Report& report, std::ostream& out, const PrintOptions& options = {});
void print_json(const Report& report, std::ostream& out);
void print_sarif(const Report& report, std::ostream& out);
void print_github(const Report& report, std::ostream& out, size_t limit_per_level = 10);
void print_junit(const Report& report, std::ostream& out);
void print_markdown(const Report& report, std::ostream& out);
// One self-contained HTML file (charts inline, no network): the `--format json` document, rendered.
void print_html(const Report& report, std::ostream& out);

// GitHub workflow-command escapes, exposed for tests.
std::string github_escape_data(std::string_view text);      // %, CR, LF
std::string github_escape_property(std::string_view text);  // also : and ,

// A path relative to `root` when it lies below it, else unchanged (forward slashes).
std::string relative_path(const std::string& path, const std::string& root);

// ---------------------------------------------------------------------------------------------------
// Annotated trace: a copy of the trace with one track per finding (process "ptadvise findings") holding
// an `X` event over each evidence interval. The original bytes are copied unchanged; the new events are
// spliced in at the start of `traceEvents`. Gzip input is read; OUT ending in `.gz` is written gzipped.

struct AnnotateError {
  std::string message;
};
// With `prediction`, the steps' critical path gets a track of its own ("critical path (replay)").
std::optional<AnnotateError> write_annotated_trace(const std::string& trace_path, const std::vector<Finding>& findings,
                                                   const std::string& out_path,
                                                   const StepPrediction* prediction = nullptr);
// The JSON events (comma-separated, no brackets) that write_annotated_trace splices in.
std::string annotation_events(const std::vector<Finding>& findings, const StepPrediction* prediction = nullptr);

// ---------------------------------------------------------------------------------------------------
// load_traces with a progress line on stderr (traces loaded, bytes parsed, rate, time left) when loading
// takes more than a second and stderr is a terminal; for `summary`, `diff` and `whatif` (docs/CI.md).
// `arg_keys`: the args keys to keep (LoadOptions::arg_keys); nullptr keeps all.
std::variant<std::vector<Timeline>, LoadError> load_traces_with_progress(
    const std::vector<std::string>& paths, std::shared_ptr<const ArgKeySet> arg_keys = nullptr);

// The args keys a command that runs `rules` must keep when it loads traces: the code's and the rules'
// (nullptr rules: the code's alone, for commands without rules).
std::shared_ptr<const ArgKeySet> args_to_keep(const RuleSet* rules);

// ---------------------------------------------------------------------------------------------------
// The `check` pipeline as a library call, shared by `ptadvise check` and `ptadvise run`.

// What every command that evaluates rules on traces (check, merge, diff, whatif) is configured by, so that
// they report the same findings for the same trace and configuration (advisor/src/command_setup.h).
struct RuleOptions {
  std::vector<std::string> rule_directories;  // empty = the shipped rules (plus config's extra ones)
  std::vector<std::string> kernel_family_tables;  // --kernel-families: added after the config's tables
  std::string config_path;              // empty = discover .ptadvise.yaml upward from the cwd
  std::vector<std::string> select;      // replaces the config's select when given
  std::vector<std::string> ignore;      // added to the config's ignore
  std::optional<std::string> source_root;
  bool accept_partial = false;          // analyse traces of which much could not be read (else exit 2)
};

struct CheckOptions : RuleOptions {
  std::vector<std::string> traces;      // files or directories
  std::string format = "text";          // stdout format
  std::vector<std::pair<std::string, std::string>> outputs;  // FORMAT, FILE
  std::optional<std::string> fail_on;   // overrides the config
  bool exit_zero = false;
  std::string baseline_path;
  std::string write_baseline_path;
  bool prune_baseline = false;
  std::string annotate_path;
  bool show_config = false;
  std::string color = "auto";           // auto | always | never
  TextDetail detail = TextDetail::Default;  // --concise / --verbose
  std::string digest_out;               // write each rank's digest (FILE, or FILE.rankN.json for several)
  bool inputs_are_digests = false;      // `merge`: `traces` are digest files
  unsigned threads = 0;                 // ranks loaded at once; 0 = one per core
  bool whatif = true;                   // --no-whatif: no replay; predictions from the ledger (docs/WHATIF.md)
};

// Runs the whole check; returns the exit code (0 clean, 1 failing findings, 2 usage/input error).
// Errors and warnings go to `err` as "ptadvise: error: …" lines.
int run_check(const CheckOptions& options, std::ostream& out, std::ostream& err);

// ---------------------------------------------------------------------------------------------------
// `ptadvise whatif TRACE [--apply RULE_OR_FINDING...]` (docs/WHATIF.md)

// The findings are the ones `check` reports with the same RuleOptions.
struct WhatifOptions : RuleOptions {
  std::string trace;
  std::vector<std::string> apply;  // rule ids, rule names or finding fingerprints; empty = every finding
  std::string format = "text";     // text | json
};
int run_whatif(const WhatifOptions& options, std::ostream& out, std::ostream& err);

// ---------------------------------------------------------------------------------------------------
// `ptadvise diff BASE NEW`

struct TimeChange {
  std::string name;
  double base_ms_per_step = 0;
  double new_ms_per_step = 0;
  double delta_ms() const { return new_ms_per_step - base_ms_per_step; }
};

struct DiffReport {
  std::string base_path, new_path;
  double base_step_ms = 0, new_step_ms = 0;
  double step_change_pct = 0;  // (new - base) / base, in %
  std::vector<Finding> appeared;     // in NEW, not in BASE (by fingerprint)
  std::vector<Finding> disappeared;  // in BASE, not in NEW
  std::vector<TimeChange> kernels;   // biggest absolute changes of GPU kernel time per step
  std::vector<TimeChange> ops;       // biggest absolute changes of CPU op time per step
  double max_regression_pct = 5;
  bool regressed() const { return step_change_pct > max_regression_pct; }
};

// Kernel and CPU-op time per step, by normalised name, for one analysed trace.
std::map<std::string, double> kernel_ms_per_step(const Analysis& analysis);
std::map<std::string, double> cpu_op_ms_per_step(const Analysis& analysis);

DiffReport diff_analyses(const Analysis& base, std::vector<Finding> base_findings, const Analysis& next,
                         std::vector<Finding> next_findings, size_t top_n = 10);
// Lines fit `width` columns: long names lose their middle ("…"), numbers are never cut.
void print_diff_text(const DiffReport& diff, std::ostream& out, size_t width = 80);
void print_diff_json(const DiffReport& diff, std::ostream& out);
void print_diff_markdown(const DiffReport& diff, std::ostream& out);

// Of the RuleOptions, the command line sets the rule directories, kernel tables, config and --accept-partial.
struct DiffOptions : RuleOptions {
  std::string base_trace;  // a file, or a directory (its first rank is compared)
  std::string new_trace;
  double max_regression_pct = 5;
  std::string format = "text";  // text | json | markdown
  size_t top = 10;
};

// Loads, analyses and checks both traces and prints the comparison. Returns 0, 1 when the step time
// regressed by more than max_regression_pct, 2 on usage or input errors.
int run_diff(const DiffOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ptadvise
