// `ptadvise whatif TRACE [--apply RULE_OR_FINDING...]`: the measured, replayed and predicted step times
// and the critical path before and after the chosen fixes (docs/WHATIF.md).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <ostream>
#include <variant>

#include "ptadvise/bad_alloc_shield.h"
#include "command_setup.h"
#include "format.h"
#include "json_doc.h"
#include "ptadvise/advisor.h"
#include "ptadvise/loader.h"
#include "whatif_format.h"

namespace ptadvise {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool matches(const Finding& finding, const std::string& wanted) {
  const std::string w = lower(wanted);
  return w == lower(finding.rule_id) || w == lower(finding.rule_name) || w == lower(finding.fingerprint);
}

void print_items(const std::vector<whatif::CriticalItem>& items, std::ostream& out) {
  const size_t keep = std::min<size_t>(5, items.size());
  for (size_t k = 0; k < keep; ++k) {
    out << "      " << format::fixed(items[k].ms_per_step, 3) << " ms  " << whatif::to_string(items[k].category) << "  "
        << format::visible(items[k].name.substr(0, 100)) << "\n";
  }
}

// A finding's part in the all-fixes replay: chosen (all of them, or the ones --apply names) and with a
// transform that keeps the batch; a chosen finding that is not replayed says why.
struct Choice {
  bool applied = false;
  bool ledger_only = false;  // chosen, but its rule declares no transform
  std::string not_applied;   // chosen but not in the replay: why
};

constexpr const char* kNoTransform = "its rule declares no transform: the saving is the ledger's estimate";

std::vector<Choice> choose(const std::vector<Finding>& findings, const std::vector<bool>& chosen) {
  std::vector<Choice> out(findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    if (!chosen[i]) continue;
    out[i].applied = in_all_fixes_replay(findings[i]);
    if (out[i].applied) continue;
    out[i].ledger_only = findings[i].fixes.empty();
    out[i].not_applied = out[i].ledger_only ? kNoTransform : "a batch-size fix: predicted per sample, alone";
  }
  return out;
}

void print_text(const std::string& path, const StepPrediction& p, const std::vector<Finding>& findings,
                const std::vector<Choice>& choices, std::ostream& out) {
  out << "ptadvise whatif: " << format::visible(path) << "\n";
  if (!p.available) {
    out << "  no steady steps to replay\n";
    return;
  }
  out << "  measured step:  " << format::fixed(p.measured_step_ms, 3) << " ms\n";
  out << "  replayed step:  " << format::fixed(p.replayed_step_ms, 3) << " ms (the trace's dependency graph, unchanged)\n";
  if (p.replayed_steps < p.steady_steps) {
    out << "    replayed: " << p.replayed_steps << " of " << p.steady_steps
        << " steady steps, a window whose measured mean is " << format::fixed(p.window_measured_step_ms, 3)
        << " ms (docs/WHATIF.md, Cost)\n";
  }
  if (!p.discrepancy.empty()) out << "    " << format::visible(p.discrepancy) << "\n";
  out << "  predicted step: " << format::fixed(p.predicted_step_ms, 3) << " ms with " << p.fixes_applied
      << (p.fixes_applied == 1 ? " fix" : " fixes") << " applied together\n";
  out << "  critical path before: " << format::critical_shares(p.critical_ms) << "\n";
  print_items(p.critical_top, out);
  out << "  critical path after:  " << format::critical_shares(p.critical_ms_fixed) << "\n";
  print_items(p.critical_top_fixed, out);
  out << "\n  findings (predicted step when fixed alone):\n";
  if (findings.empty()) out << "    (none)\n";
  bool any_ledger_only = false;
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const Choice& choice = choices[i];
    any_ledger_only = any_ledger_only || choice.ledger_only;
    out << "    " << (choice.applied ? "[applied] " : choice.ledger_only ? "[ledger]  " : "          ") << f.rule_id
        << " " << f.rule_name << " at " << format::visible(describe_site(f.site)) << ": "
        << format::fixed(f.predicted_step_ms, 3) << " ms (saves " << format::fixed(f.saving_ms_per_step, 3) << " ms, "
        << f.saving_basis << ")  " << f.fingerprint << "\n";
    // The reason shared by every ledger-only finding is said once, under the list.
    if (!choice.not_applied.empty() && !choice.ledger_only) {
      out << "              not in the replay: " << choice.not_applied << "\n";
    }
  }
  if (any_ledger_only) out << "    [ledger]: not in the replay: " << kNoTransform << "\n";
}

void print_json(const std::string& path, const StepPrediction& p, const std::vector<Finding>& findings,
                const std::vector<Choice>& choices, std::ostream& out) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  using jsondoc::Json;
  using jsondoc::number;
  Json list = Json::array();
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    Json item = {{"rule_id", f.rule_id},
                 {"fingerprint", f.fingerprint},
                 {"site", describe_site(f.site)},
                 {"applied", choices[i].applied},
                 {"predicted_step_ms", number(f.predicted_step_ms, 3)},
                 {"saving_ms_per_step", number(f.saving_ms_per_step, 3)},
                 {"saving_basis", f.saving_basis}};
    if (!choices[i].not_applied.empty()) item["not_applied"] = choices[i].not_applied;
    list.push_back(std::move(item));
  }
  jsondoc::write(out, Json{{"path", path}, {"whatif", format::whatif_document(p)}, {"findings", std::move(list)}});
}

}  // namespace

int run_whatif(const WhatifOptions& options, std::ostream& out, std::ostream& err) {
  auto fail = [&err](const std::string& message) {
    err << "ptadvise: error: " << format::visible(message) << "\n";
    return 2;
  };
  if (options.format != "text" && options.format != "json") return fail("--format: expected text, json");
  // The findings are the ones `check` reports for the same trace and configuration: the same rules,
  // selection, thresholds, kernel families, partial-trace gate and suppressions.
  std::optional<Timeline> loaded;
  std::optional<SelectedRules> selected;
  std::optional<KernelClassifier> kernels;
  std::string source_root;
  try {
    const Config config = check_detail::effective_config(options);
    check_detail::CompilingKernels compiling_kernels = check_detail::compile_kernel_classifier(config);
    auto rules = load_selected_rules(config);
    kernels.emplace(check_detail::kernel_classifier(compiling_kernels));  // its error first, as before
    if (auto* error = std::get_if<ConfigError>(&rules)) return fail(error->message);
    selected.emplace(std::move(std::get<SelectedRules>(rules)));
    std::error_code cwd_error;
    source_root = config.source_root.value_or(std::filesystem::current_path(cwd_error).string());
    loaded.emplace(check_detail::load_one(options.trace, options.accept_partial, err, args_to_keep(&selected->rules)));
  } catch (const check_detail::Failure& failure) {
    return fail(failure.message);
  }
  const Timeline& timeline = *loaded;
  const RuleSet& rules = selected->rules;
  Analysis analysis = analyze(timeline, *kernels);
  EvaluateOptions evaluate_options = selected->selection;
  evaluate_options.predict = false;  // one graph below serves every finding and the trace
  std::vector<Finding> findings = evaluate(rules, analysis, evaluate_options);
  for (auto& finding : findings) {
    if (finding.trace_path.empty()) finding.trace_path = timeline.path;
  }
  apply_suppressions(findings, source_root);
  const WhatIf whatif(analysis);
  whatif.predict_findings(findings);
  rank_findings(findings);  // sets the fingerprints --apply may name
  std::vector<bool> picked(findings.size(), options.apply.empty());
  for (const std::string& wanted : options.apply) {
    bool found = false;
    for (size_t i = 0; i < findings.size(); ++i) {
      if (matches(findings[i], wanted)) picked[i] = found = true;
    }
    if (found) continue;
    if (rules.find(wanted) != nullptr) return fail("--apply " + wanted + ": the rule reports nothing on this trace");
    std::string hint = rules.closest(wanted);
    return fail("--apply " + wanted + ": no rule id, rule name or finding fingerprint of this trace" +
                (hint.empty() ? std::string() : " (did you mean " + hint + "?)"));
  }
  std::vector<Finding> chosen;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (picked[i]) chosen.push_back(findings[i]);
  }
  StepPrediction prediction = whatif.predict_steps(chosen);
  const std::vector<Choice> choices = choose(findings, picked);
  if (options.format == "json") {
    print_json(timeline.path, prediction, findings, choices, out);
  } else {
    print_text(timeline.path, prediction, findings, choices, out);
  }
  return 0;
}

}  // namespace ptadvise
