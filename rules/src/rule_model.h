// Internal to rules/: a rule file compiled into the primitives the evaluator runs.
// The YAML language is documented in docs/RULE_LANGUAGE.md; keep both in step.
#pragma once

#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "name_matcher.h"
#include "ptadvise/finding.h"
#include "ptadvise/rules.h"
#include "transform_spec.h"

namespace ptadvise {

// Rule ids and names compare without case ("pta101" selects PTA101).
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A predicate on one args value of an event: `{key: bytes, ge: 1MiB}`.
enum class ArgOp { Exists, Missing, NonEmpty, Eq, Ne, Lt, Le, Gt, Ge, Contains, Glob, DimNotMultipleOf };
struct ArgPredicate {
  std::string key;         // args key
  std::optional<int> index;  // `Input Dims[2]`: element of an array value
  ArgOp op = ArgOp::Exists;
  double number = 0;       // numeric comparisons, DimNotMultipleOf
  std::string text;        // Eq/Ne on strings, Contains, Glob
  bool numeric = false;    // Eq/Ne compare numbers
};

// "A followed by B on the same thread within T", "A preceded by B", "A contains B", "A inside B (by time)".
enum class SequenceKind { FollowedBy, PrecededBy, Contains };
struct SequencePredicate {
  SequenceKind kind = SequenceKind::FollowedBy;
  size_t selection = 0;   // index of the other selection (evaluated first)
  int64_t within_ns = 0;  // FollowedBy/PrecededBy: largest gap
  bool within_step = false;  // `within: step`: the other event only has to be in the same step
  bool negate = false;    // `not_followed_by`, ...
};

struct Selection {
  std::string name;
  uint32_t kinds = 0;  // bit (1 << EventKind); 0 = any kind
  std::optional<NameMatcher> name_match;
  std::optional<NameMatcher> name_exclude;
  // `family` / `exclude_family`: bit (1 << KernelFamily) of the kernel family table (kernels only); 0 = any
  uint32_t families = 0;
  uint32_t exclude_families = 0;
  std::optional<NameMatcher> inside;      // some ancestor's name matches
  std::optional<NameMatcher> not_inside;  // no ancestor's name matches
  int64_t min_dur_ns = -1;  // inclusive; -1 = no bound
  int64_t max_dur_ns = -1;  // exclusive
  bool in_step = false;
  bool after_first_step = false;
  bool in_warmup = false;  // only events of the warm-up steps (every other selection leaves them out)
  // Runtime/driver calls that waited for the GPU op they launched (Analysis::call_waits_for_op: launches on
  // a thread whose launches block, CUDA_LAUNCH_BLOCKING; pageable copies); other events never match.
  bool waits_for_gpu = false;
  // `charged_idle: [causes]`: only events the idle ledger charges as the culprit of idle time of these
  // causes (bits of 1 << IdleCause; 0 = no filter).
  uint32_t charged_idle = 0;
  std::vector<ArgPredicate> args;
  std::vector<SequencePredicate> sequences;
  std::vector<size_t> union_of;  // `union: [a, b]`: the events of other selections (then no other filter)
};

enum class SiteKey { Op, OpChain, Kernel, Name, Source, Bytes };

enum class MetricUnit { Count, Ms, Bytes, Percent, Ratio, Value };

enum class MetricKind {
  Count,         // events per step
  Time,          // summed duration per step (ms)
  Max,           // longest single event (ms)
  Bytes,         // summed `bytes` arg per step
  StepsPresent,  // % of steps with at least one event
  ShareOfStep,   // summed duration per step over the median step (%)
  MaxArg,        // largest numeric arg value over the selection
  Idle,          // ledger idle time per step (ms), or gap statistics
  Ratio,         // metric a / metric b (fraction; undefined when b is 0)
  Sum,           // sum of metrics
  Builtin,       // trace-level value (steps, median_step_ms, has_gpu, ...)
  Threshold,     // a threshold's value (used as an operand)
  Percent,       // `<ms metric>_pct`: the ms metric over the median step (%)
  Literal,       // a number written in a condition
};

enum class IdleStat { PerStep, MaxGap, GapEveryStep };

struct Metric {
  std::string name;
  MetricKind kind = MetricKind::Count;
  MetricUnit unit = MetricUnit::Count;
  size_t selection = 0;          // Count..MaxArg
  bool site_scoped = false;      // over the group's events (primary selection with group_by)
  std::string arg_key;           // MaxArg
  // Idle
  uint32_t idle_causes = 0;      // bit (1 << IdleCause); all bits = any
  enum class Culprits { Any, Site, Selection } culprits = Culprits::Any;
  size_t culprit_selection = 0;
  bool include_claimed = false;
  bool refill = false;
  int64_t max_stretch_ns = -1;  // only gaps in idle stretches shorter than this (-1: any)
  int64_t min_stretch_ns = -1;  // only gaps in idle stretches at least this long  // also the rest of each matched idle stretch (cpu-work/untraced/launch-bound pieces)
  IdleStat idle_stat = IdleStat::PerStep;
  // Ratio, Sum, Percent: indices into CompiledRule::metrics
  std::vector<size_t> operands;
  std::string builtin;  // Builtin
  size_t threshold = 0;  // Threshold
  double literal = 0;    // Literal
};

// Names and defaults of the noise floor (an absolute and a relative minimum saving per step).
inline constexpr const char* kMinSavingMs = "min_saving_ms";
inline constexpr const char* kMinSavingPct = "min_saving_pct";
inline constexpr double kDefaultMinSavingMs = 0.01;
inline constexpr double kDefaultMinSavingPct = 0.5;

struct Threshold {
  std::string name;
  double value = 0;
  std::string unit;
  std::string doc;
};

enum class CompareOp { Lt, Le, Gt, Ge, Eq, Ne };
struct Condition {
  enum class Kind { Compare, All, Any, Not, Truthy } kind = Kind::Compare;
  size_t left = 0;   // metric index
  CompareOp op = CompareOp::Ge;
  size_t right = 0;  // metric index (thresholds and literals are metrics too)
  std::vector<Condition> children;
};

struct SavingTerm {
  size_t metric = 0;
  double factor = 1.0;
  std::optional<Condition> when;
};

// A message template split into literal text and placeholders.
struct TemplatePart {
  std::string literal;
  enum class Kind { Literal, Metric, SiteOp, SiteKernel, SiteName, SiteSource, SiteChain, Idle, IdleCulprits } kind =
      Kind::Literal;
  size_t metric = 0;
  bool as_bytes = false;
};
using Template = std::vector<TemplatePart>;

struct CompiledRule {
  std::vector<Selection> selections;  // dependency order; `primary` is the grouped one
  size_t primary = 0;
  std::vector<SiteKey> group_by;      // empty: one finding for the whole trace
  std::vector<Metric> metrics;
  std::vector<Threshold> thresholds;
  std::optional<Condition> when;
  Template message;
  Template short_message;  // empty: the rule has none
  std::vector<SavingTerm> saving;
  std::string saving_method;
  Confidence confidence = Confidence::Medium;
  bool order_last = false;
  bool order_first = false;  // `order: first`: root causes that explain other rules' symptoms claim idle first
  std::vector<RuleTest> tests;
  RuleTransform transform;  // `transform:` (transform_spec.h)
};

}  // namespace ptadvise
