// Job rules (`scope: job`): evaluation of the compiled rules (job_rule_model.h) over the metric rows of a
// job's ranks (job_metrics.h), and the findings' messages.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "job_rule_model.h"
#include "matching.h"

namespace ptadvise {

namespace {

using job_detail::Condition;
using job_detail::Op;
using job_detail::Operand;
using job_detail::Over;
using job_detail::TemplatePart;

bool compare(double a, Op op, double b) {
  switch (op) {
    case Op::Lt:
      return a < b;
    case Op::Le:
      return a <= b;
    case Op::Gt:
      return a > b;
    case Op::Ge:
      return a >= b;
    case Op::Eq:
      return a == b;
    case Op::Ne:
      return a != b;
  }
  return false;
}

double value_of(const Operand& o, const job_detail::Row& row, const std::vector<double>& thresholds) {
  if (o.threshold >= 0) return thresholds[static_cast<size_t>(o.threshold)];
  if (!o.is_metric) return o.literal;
  auto it = row.values.find(o.metric);
  return it == row.values.end() ? std::nan("") : it->second;
}

bool holds(const Condition& c, const job_detail::Row& row, const std::vector<double>& thresholds) {
  switch (c.kind) {
    case Condition::Kind::All:
      return std::all_of(c.children.begin(), c.children.end(), [&](const Condition& x) { return holds(x, row, thresholds); });
    case Condition::Kind::Any:
      return std::any_of(c.children.begin(), c.children.end(), [&](const Condition& x) { return holds(x, row, thresholds); });
    case Condition::Kind::Not:
      return !holds(c.children.front(), row, thresholds);
    case Condition::Kind::Compare:
      break;
  }
  const double a = value_of(c.left, row, thresholds), b = value_of(c.right, row, thresholds);
  if (std::isnan(a) || std::isnan(b)) return false;  // a metric the job cannot measure never fires
  return compare(a, c.op, b);
}

// A job finding's predicted step. With a keep_pace transform: the joined replay with its ranks keeping
// pace, its saving the smaller of the claim and what that replay takes off the step (as a trace's findings
// with a transform, docs/WHATIF.md). Otherwise, and when the job has no joined replay: the job's step
// minus the claim.
void predict(Finding& f, const JobRuleSetImpl::Rule& rule, const JobAnalysis& job,
             const std::vector<const RankDigest*>& ranks) {
  f.saving_basis = "ledger";
  if (rule.keep_pace) {
    std::vector<size_t> pace;
    for (int rank : f.ranks) {
      for (const RankJobStats& stats : job.per_rank) {
        if (stats.rank == rank) pace.push_back(stats.digest);
      }
    }
    if (auto paced = keep_pace_step_ms(ranks, job, pace)) {
      f.saving_ms_per_step = std::min(f.saving_ms_per_step, std::max(0.0, job.prediction.measured_step_ms - *paced));
      f.saving_pct = job.step_ms > 0 ? 100.0 * f.saving_ms_per_step / job.step_ms : 0;
      f.saving_basis = "ledger+replay";
    }
  }
  f.predicted_step_ms = std::max(0.0, job.step_ms - f.saving_ms_per_step);
}

std::string format_number(double value) {
  char buffer[64];
  const double magnitude = std::fabs(value);
  if (value == std::floor(value) && magnitude < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);  // ranks, counts
    return buffer;
  }
  if (magnitude > 0 && magnitude < 0.1) {
    // Three significant digits in plain decimals ("0.00008", never "0.000"), trailing zeros dropped.
    const int decimals = std::min(12, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    std::string text = buffer;
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
  }
  const int decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3;
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string rank_list(const std::vector<int>& ranks, size_t job_ranks) {
  if (ranks.size() == job_ranks && job_ranks > 1) return "all " + std::to_string(job_ranks) + " ranks";
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8 && ranks.size() > 10) {
      out += ", … (" + std::to_string(ranks.size()) + " ranks)";
      break;
    }
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return out;
}

}  // namespace

std::vector<Finding> evaluate_job(const JobRuleSet& rules, const JobAnalysis& job,
                                  const std::vector<const RankDigest*>& ranks,
                                  const std::map<std::string, std::map<std::string, double>>& overrides,
                                  const std::vector<std::string>& skip) {
  std::vector<Finding> findings;
  const JobRuleSetImpl& set = rules.impl();
  for (size_t r = 0; r < set.rules.size(); ++r) {
    const RuleInfo& info = set.infos[r];
    const auto& rule = set.rules[r];
    if (std::find(skip.begin(), skip.end(), info.id) != skip.end()) continue;
    std::vector<double> thresholds;
    auto override_it = overrides.find(info.id);
    for (const auto& t : rule.thresholds) {
      double value = t.value;
      if (override_it != overrides.end()) {
        auto v = override_it->second.find(t.name);
        if (v != override_it->second.end()) value = v->second;
      }
      thresholds.push_back(value);
    }
    std::vector<job_detail::Row> rows = job_detail::rows(job_detail::row_kind(rule.over), job, ranks);
    std::vector<job_detail::Row> firing;
    for (auto& row : rows) {
      if (holds(rule.when, row, thresholds)) firing.push_back(std::move(row));
    }
    if (firing.empty()) continue;
    if (rule.over == Over::Ranks) firing = {job_detail::fold_rows(firing)};
    for (const auto& row : firing) {
      Finding f = finding_of(info);
      f.ranks = row.ranks;
      f.site.op = row.site;
      f.site.detail = rank_list(row.ranks, job.ranks.size());
      auto render = [&](const std::vector<TemplatePart>& parts) {
        std::string text;
        for (const auto& part : parts) {
          if (part.placeholder.empty()) {
            text += part.literal;
          } else if (part.placeholder == "ranks") {
            text += rank_list(row.ranks, job.ranks.size());
          } else if (part.placeholder == "rank_list") {
            std::string list;
            for (int rank : row.ranks) list += (list.empty() ? "" : ", ") + std::to_string(rank);
            text += list;
          } else if (part.placeholder == "cause" || part.placeholder == "type") {
            auto it = row.texts.find(part.placeholder);
            text += it == row.texts.end() ? "unknown" : it->second;
          } else {
            auto it = row.values.find(part.placeholder);
            text += it == row.values.end() ? "?" : format_number(it->second);
          }
        }
        while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
        return text;
      };
      f.message = render(rule.message);
      f.short_message = render(rule.short_message);
      f.short_fix = info.short_fix;
      auto saving = row.values.find(rule.saving_metric);
      f.saving_ms_per_step = saving == row.values.end() || std::isnan(saving->second) ? 0 : std::max(saving->second, 0.0);
      f.saving_pct = job.step_ms > 0 ? 100.0 * f.saving_ms_per_step / job.step_ms : 0;
      f.time_ms_per_step = f.saving_ms_per_step;
      f.steps_present_pct = 100;
      f.saving_method = info.saving_method;
      f.confidence = rule.confidence;
      f.trace_path = job.name;
      predict(f, rule, job, ranks);
      findings.push_back(std::move(f));
    }
  }
  return findings;
}

}  // namespace ptadvise
