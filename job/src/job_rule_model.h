// Internal to job/: a compiled job rule (`scope: job`), as job_rule_compiler.cpp makes it from YAML and
// job_rule_evaluator.cpp runs it. docs/RULE_LANGUAGE.md "Job scope" documents the language.
#pragma once

#include <string>
#include <vector>

#include "job_metrics.h"
#include "ptadvise/job.h"
#include "ptadvise/rules.h"

namespace ptadvise {

namespace job_detail {

// What one rule looks at: the job, each rank, the firing ranks as one, each collective type.
enum class Over { Job, Rank, Ranks, CollectiveType };

enum class Op { Lt, Le, Gt, Ge, Eq, Ne };

struct Operand {
  bool is_metric = false;
  std::string metric;     // a metric of the row
  int threshold = -1;     // index into thresholds
  double literal = 0;
};

// `when`: a comparison, or all / any / not of conditions.
struct Condition {
  enum class Kind { Compare, All, Any, Not } kind = Kind::Compare;
  Operand left, right;
  Op op = Op::Ge;
  std::vector<Condition> children;
};

// A message is literal text and {placeholders}.
struct TemplatePart {
  std::string literal;
  std::string placeholder;  // empty for literal text
};

// The rows a rule over `over` looks at (`over: ranks` looks at the rank rows, then folds the firing ones).
inline RowKind row_kind(Over over) {
  return over == Over::Job              ? RowKind::Job
         : over == Over::CollectiveType ? RowKind::CollectiveType
                                        : RowKind::Rank;
}

}  // namespace job_detail

// The rules of a JobRuleSet, in load order; infos[i] describes rules[i].
struct JobRuleSetImpl {
  struct Rule {
    job_detail::Over over = job_detail::Over::Job;
    std::vector<ThresholdInfo> thresholds;
    job_detail::Condition when;
    std::vector<job_detail::TemplatePart> message;
    std::vector<job_detail::TemplatePart> short_message;  // empty: none
    std::string saving_metric;
    Confidence confidence = Confidence::Medium;
    bool lone_rank = false;  // also judges one recorded rank of a larger job
    bool keep_pace = false;  // transform: the finding's ranks arrive at the collectives with the others
    std::vector<JobRuleTest> tests;
  };
  std::vector<RuleInfo> infos;
  std::vector<Rule> rules;
};

}  // namespace ptadvise
