// Loading the rules of a run and refusing to run none: every command that evaluates rules goes
// through here, so a wrong rule directory or a configuration that deselects everything is exit 2.
#include <algorithm>

#include "ptadvise/advisor.h"
#include "ptadvise/rules.h"

namespace ptadvise {

std::variant<RuleSet, ConfigError> load_rule_set(const std::vector<std::string>& extra_directories) {
  std::vector<std::string> directories{default_rules_directory()};
  directories.insert(directories.end(), extra_directories.begin(), extra_directories.end());
  auto loaded = load_rules(directories);
  if (auto* error = std::get_if<RuleError>(&loaded)) return ConfigError{error->message};
  auto& rules = std::get<RuleSet>(loaded);
  if (rules.infos().empty()) {
    std::string searched;
    for (const auto& directory : directories) searched += (searched.empty() ? "" : ", ") + directory;
    return ConfigError{"no rules found in " + searched +
                       ": no *.yaml rule file there (an incomplete installation, or PTADVISE_RULES_DIR or "
                       "PTADVISE_DATA_DIR naming the wrong directory)"};
  }
  return std::move(rules);
}

std::variant<SelectedRules, ConfigError> load_selected_rules(const Config& config,
                                                             const std::vector<RuleInfo>& job_rules) {
  auto loaded = load_rule_set(config.rule_directories);
  if (auto* error = std::get_if<ConfigError>(&loaded)) return *error;
  SelectedRules selected{std::move(std::get<RuleSet>(loaded)), {}, 0};
  auto selection = resolve_selection(config, selected.rules, job_rules);
  if (auto* error = std::get_if<ConfigError>(&selection)) return *error;
  selected.selection = std::move(std::get<EvaluateOptions>(selection));
  const auto& skip = selected.selection.skip;
  auto kept = [&](const RuleInfo& rule) { return std::find(skip.begin(), skip.end(), rule.id) == skip.end(); };
  selected.selected_count =
      static_cast<size_t>(std::count_if(selected.rules.infos().begin(), selected.rules.infos().end(), kept) +
                          std::count_if(job_rules.begin(), job_rules.end(), kept));
  if (selected.selected_count == 0) {
    return ConfigError{"no rule to run: select, extend-select and ignore (" +
                       (config.path.empty() ? std::string("command line") : config.path + " and command line") +
                       ") leave none of the " + std::to_string(selected.rules.infos().size() + job_rules.size()) + " rules"};
  }
  return selected;
}

}  // namespace ptadvise
