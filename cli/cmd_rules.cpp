// `ptadvise rules` (list the rules) and `ptadvise explain RULE` (print one rule's documentation).
#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "ptadvise/bad_alloc_shield.h"
#include "commands.h"
#include "ptadvise/job.h"
#include "ptadvise/advisor.h"
#include "ptadvise/rules.h"

namespace ptadvise::cli {

namespace {

struct RulesOptions {
  std::vector<std::string> rule_directories;
  std::string format = "text";
  std::string rule;
};

std::string format_value(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Loads the shipped rules plus any --rules directories; prints the error and sets exit code 2 on failure
// (also when no rule is found at all).
std::unique_ptr<RuleSet> load(const RulesOptions& options) {
  auto loaded = load_rule_set(options.rule_directories);
  if (auto* error = std::get_if<ConfigError>(&loaded)) {
    print_error(error->message);
    exit_code() = kExitInputError;
    return nullptr;
  }
  return std::make_unique<RuleSet>(std::move(std::get<RuleSet>(loaded)));
}

// The job rules (rules.d/job/, `scope: job`) of the same directories: listed and explained with the others.
std::vector<RuleInfo> job_rule_infos(const RulesOptions& options) {
  std::vector<std::string> directories{default_rules_directory()};
  directories.insert(directories.end(), options.rule_directories.begin(), options.rule_directories.end());
  auto loaded = load_job_rules(directories);
  if (auto* error = std::get_if<JobRuleError>(&loaded)) {
    print_error(error->message);
    exit_code() = kExitInputError;
    return {};
  }
  return std::get<JobRuleSet>(loaded).infos();
}

void list_rules(const RulesOptions& options) {
  auto rules = load(options);
  if (!rules) return;
  std::vector<RuleInfo> all = rules->infos();
  for (auto& info : job_rule_infos(options)) all.push_back(std::move(info));
  if (options.format == "json") {
    BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& info : all) {
      list.push_back({{"id", info.id},
                      {"name", info.name},
                      {"severity", to_string(info.severity)},
                      {"tags", info.tags},
                      {"summary", info.summary},
                      {"fix", info.fix},
                      {"file", info.file}});
    }
    std::cout << list.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return;
  }
  size_t name_width = 4;
  for (const auto& info : all) name_width = std::max(name_width, info.name.size());
  for (const auto& info : all) {
    std::string tags;
    for (const auto& tag : info.tags) tags += (tags.empty() ? "" : ",") + tag;
    std::cout << info.id << "  " << info.name << std::string(name_width - info.name.size() + 2, ' ')
              << to_string(info.severity) << std::string(9 - to_string(info.severity).size(), ' ') << '[' << tags
              << "]  " << info.summary << '\n';
  }
}

void print_section(const std::string& title, const std::string& body) {
  std::cout << title << '\n';
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) std::cout << (line.empty() ? "" : "    ") << line << '\n';
  std::cout << '\n';
}

void explain_rule(const RulesOptions& options) {
  auto rules = load(options);
  if (!rules) return;
  const RuleInfo* info = rules->find(options.rule);
  const std::vector<RuleInfo> job_infos = info ? std::vector<RuleInfo>{} : job_rule_infos(options);
  for (const auto& job_info : job_infos) {
    std::string wanted = options.rule, id = job_info.id;
    for (auto* text : {&wanted, &id}) {
      for (char& c : *text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (id == wanted || job_info.name == options.rule) info = &job_info;
  }
  if (info == nullptr) {
    std::string hint = rules->closest(options.rule);
    print_error("unknown rule '" + options.rule + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                " (`ptadvise rules` lists them)");
    exit_code() = kExitInputError;
    return;
  }
  std::string tags;
  for (const auto& tag : info->tags) tags += (tags.empty() ? "" : ", ") + tag;
  std::cout << info->id << " " << info->name << " (" << to_string(info->severity) << "; tags: " << tags << ")\n"
            << info->summary << "\n\n";
  print_section("What it does", info->docs.what);
  print_section("Why it is slow", info->docs.why);
  print_section("Example", info->docs.example);
  print_section("Fix", info->docs.fix);
  if (!info->thresholds.empty()) {
    std::cout << "Thresholds (override in .ptadvise.yaml)\n";
    for (const auto& threshold : info->thresholds) {
      std::cout << "    " << threshold.name << " = " << format_value(threshold.value)
                << (threshold.unit.empty() ? "" : " " + threshold.unit) << "\n        " << threshold.doc << '\n';
    }
    std::cout << '\n';
  }
  if (!info->saving_method.empty()) print_section("Estimated saving", info->saving_method);
  // How the finding's predicted step is made (docs/WHATIF.md): a replay with the fix, or the claim alone.
  print_section("Predicted step (what-if)",
                info->transform.empty()
                    ? "No transform: the predicted step is the measured step minus the estimated saving (saving_basis "
                      "ledger)."
                    : "Replayed with the fix as the transform " + info->transform + " (saving_basis ledger+replay). " +
                          info->transform_method);
  std::cout << "Defined in " << info->file << '\n';
}

}  // namespace

void add_rules_commands(CLI::App& app) {
  auto options = std::make_shared<RulesOptions>();

  auto* rules = app.add_subcommand("rules", "List the rules: id, name, severity, tags and summary");
  rules->add_option("--rules", options->rule_directories, "Extra rule directory (repeatable)")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  rules->add_option("--format", options->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  rules->callback([options] { list_rules(*options); });

  auto* explain = app.add_subcommand("explain", "Print a rule's documentation, thresholds and saving estimate");
  explain->add_option("rule", options->rule, "Rule id (PTA101) or name (h2d-copy-every-step)")->required();
  explain->add_option("--rules", options->rule_directories, "Extra rule directory (repeatable)")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  explain->callback([options] { explain_rule(*options); });
}

}  // namespace ptadvise::cli
