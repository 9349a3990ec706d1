// What a rule reports, and the static description of a rule. Produced by rules/, ranked, filtered and
// printed by advisor/. Printers read only these structs, never the timeline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/whatif.h"

namespace ptadvise {

enum class Severity { Info, Warning, Error };
std::string_view to_string(Severity severity);          // "info", "warning", "error"
std::optional<Severity> parse_severity(std::string_view text);

struct RuleDocs {
  std::string what;     // What it does
  std::string why;      // Why it is slow
  std::string example;  // Example (code that triggers it)
  std::string fix;      // Fix (code that does not)
};

// A named threshold of a rule, with its default (or overridden) value and why it is set there.
struct ThresholdInfo {
  std::string name;
  double value = 0;
  std::string unit;  // "%", "ms", "count", ... as documented in the rule
  std::string doc;
};

// A rule's `short_fix` fits one 80-column line after the text report's "   = help: ".
inline constexpr size_t kShortFixColumns = 66;

// At most `columns` code points, the middle replaced by "…": how short texts (a short_message, the text
// report's lines) shorten names (ops, kernels, file paths); never used on text with numbers in it.
std::string elide_middle(const std::string& text, size_t columns);

struct RuleInfo {
  std::string id;    // PTA101
  std::string name;  // item-sync-in-step
  std::string summary;  // one line
  Severity severity = Severity::Warning;
  std::vector<std::string> tags;
  std::string fix;  // one-line fix shown with each finding
  RuleDocs docs;
  std::string file;  // the YAML file it came from
  std::vector<ThresholdInfo> thresholds;
  std::string saving_method;  // how the rule estimates the saving (its `saving.method`)
  std::string transform = {};  // its fix as what-if transforms (describe_transform), empty when it declares none
  std::string transform_method = {};  // the transform's `method`
  uint8_t needs = 0;          // RuleNeed bits: what a trace must have for the rule to check anything
  std::string short_fix = {};  // the fix in at most kShortFixColumns, for the default terminal output (empty: none)
};

// What a rule needs from a trace, derived from what it selects and measures.
enum RuleNeed : uint8_t {
  kNeedsGpu = 1u << 0,               // it selects only GPU activity, or measures GPU idle time without a CPU fallback
  kNeedsStacks = 1u << 1,            // it selects Python frames (python_function events)
  kNeedsDeviceProperties = 1u << 2,  // it reads the compute capability
  kNeedsMemorySize = 1u << 3,        // it reads the GPU's memory size (deviceProperties only: never inferred)
  kNeedsMemoryEvents = 1u << 4,      // it selects only memory events (recorded with profile_memory=True)
};

// Which rules could check a trace, and why the others could not (a rule missing several things counts
// under the first of GPU, stacks, device properties (compute capability, memory size), memory events,
// steady state).
struct Coverage {
  size_t ran = 0;
  size_t no_gpu = 0;
  size_t no_stacks = 0;
  size_t no_device_properties = 0;
  size_t no_memory_events = 0;
  size_t no_steady_state = 0;
  std::vector<std::pair<std::string, std::string>> not_run;  // rule id, what the trace lacks ("no GPU activity", ...)
  size_t skipped() const { return no_gpu + no_stacks + no_device_properties + no_memory_events + no_steady_state; }
};

// One example occurrence, enough to find it in Perfetto.
struct Evidence {
  uint32_t step = kNone;  // step index, kNone when outside steps
  int64_t step_number = -1;
  int64_t ts_ns = 0;      // relative to the trace origin
  int64_t file_ts_ns = 0;  // the event's ts as written in the file (its own time base), in ns
  int64_t dur_ns = 0;
  std::string event;      // event name
  std::string track;      // "pid 123 tid 456" or "GPU 0 stream 7"
};

// What identifies "the same thing" across steps and recordings (used for fingerprints).
struct Site {
  std::string op;      // responsible CPU op (e.g. aten::_local_scalar_dense)
  std::string kernel;  // GPU op name when relevant
  std::vector<std::string> op_chain;  // outermost -> innermost
  std::optional<SourceLocation> source;
  std::string detail;  // e.g. "Memcpy HtoD (Pageable -> Device), 4 KiB"
};

enum class Confidence { Low, Medium, High };
std::string_view to_string(Confidence confidence);

struct Finding {
  std::string rule_id;
  std::string rule_name;
  Severity severity = Severity::Warning;
  std::vector<std::string> tags;
  Site site;
  std::string message;
  // The message in a few words for the default terminal output: what happens and its one cost, no site
  // names (the location line shows them); empty when the rule has no `short_message`.
  std::string short_message;
  std::string fix;
  std::string short_fix;  // RuleInfo::short_fix
  std::vector<Evidence> evidence;  // up to three

  // Measured, per step.
  double count_per_step = 0;
  double time_ms_per_step = 0;
  double steps_present_pct = 0;

  // Estimated saving: what removing the cause would give back per step.
  double saving_ms_per_step = 0;
  double saving_pct = 0;  // of the median step time
  std::string saving_method;  // how the estimate was made, phrased for the user
  Confidence confidence = Confidence::Medium;
  std::vector<uint32_t> idle_gaps;  // indices into Analysis::idle claimed by this finding (never by two)
  // What-if (docs/WHATIF.md): the step time predicted once this finding is fixed, and how the saving was
  // found: "replay" (measured - replayed with the rule's transform) or "ledger" (the rule's estimate).
  double predicted_step_ms = 0;
  std::string saving_basis = "ledger";
  // The rule's noise floor in ms per step (its min_saving_ms, or min_saving_pct of the period if larger;
  // 0 for rules that estimate no saving). A replayed saving below it is said so in saving_method.
  double noise_floor_ms = 0;
  std::vector<whatif::Fix> fixes;  // the rule's transform on this finding's events (empty: none declared)

  // Where it came from.
  std::string trace_path;
  std::optional<int> trace_rank;
  // The ranks of a distributed job this finding concerns (job findings, and per-rank findings folded
  // because every rank has them); empty for a finding of one trace.
  std::vector<int> ranks;

  // Filled by the advisor.
  int rank = 0;
  std::string fingerprint;
};

// A finding of `rule`: its id, name, severity, tags and fixes. The site, figures and evidence are the
// caller's (a per-trace rule's evaluator, a job rule's).
Finding finding_of(const RuleInfo& rule);
// The reverse, for a finding whose rule is not at hand (a hand-made report): what the finding says of its
// rule, with its name as the summary.
RuleInfo rule_of(const Finding& finding);

}  // namespace ptadvise
