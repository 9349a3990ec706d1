// `ptadvise --version` (version, git commit, rule set) and the generators of completions and the man page.
#include <zlib.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli_model.h"
#include "commands.h"
#include "ptadvise/advisor.h"
#include "ptadvise/data_directory.h"
#include "ptadvise/git_commit.h"  // generated at build time: PTADVISE_GIT_COMMIT

namespace ptadvise::cli {

namespace {

// The rule set's version: how many rules and a CRC-32 of their files (relative name and content), so two
// installations report the same version exactly when they run the same rules.
std::string rule_set_version() {
  auto loaded = load_rule_set({});
  if (auto* error = std::get_if<ConfigError>(&loaded)) return "not loaded: " + error->message;
  std::vector<RuleInfo> infos = std::get<RuleSet>(loaded).infos();
  std::filesystem::path directory = default_rules_directory();
  auto job_rules = load_job_rules({directory.string()});  // the job-scope rules ship in the same directory
  if (auto* error = std::get_if<JobRuleError>(&job_rules)) return "not loaded: " + error->message;
  for (const RuleInfo& rule : std::get<JobRuleSet>(job_rules).infos()) infos.push_back(rule);
  std::sort(infos.begin(), infos.end(), [](const RuleInfo& a, const RuleInfo& b) { return a.file < b.file; });
  uint32_t crc = 0;
  for (const RuleInfo& rule : infos) {
    std::string name = std::filesystem::path(rule.file).lexically_relative(directory).generic_string();
    std::ifstream in(rule.file, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(name.data()), name.size() + 1));  // with its NUL, as a separator
    crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(content.data()), content.size()));
  }
  std::ostringstream text;
  text << infos.size() << " rules, crc32 " << std::hex << std::setw(8) << std::setfill('0') << crc << " ("
       << directory.string() << ")";
  return text.str();
}

std::string version_text() {
  std::string data = data_directory();
  return std::string("ptadvise ") + PTADVISE_VERSION + "\ncommit " + PTADVISE_GIT_COMMIT + "\nrule set " +
         rule_set_version() + "\ndata " + (data.empty() ? "not found" : data);
}

}  // namespace

void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", [] { return version_text(); },
                       "Print the version, git commit and rule set (count and checksum), then exit");
}

void add_generate_commands(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  auto* completion = app.add_subcommand("completion", "Print the shell completion script for bash, zsh or fish");
  completion->add_option("shell", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  completion->footer(
      "Installed packages already ship them. From a build tree, e.g.:\n"
      "  ptadvise completion bash > ~/.local/share/bash-completion/completions/ptadvise");
  completion->callback([&app, shell] {
    CliModel model = describe_cli(app);
    std::cout << (*shell == "bash" ? bash_completion(model) : *shell == "zsh" ? zsh_completion(model) : fish_completion(model));
  });
  auto* man = app.add_subcommand("man", "Print the man page (roff): ptadvise man | man -l -");
  man->callback([&app] { std::cout << man_page(describe_cli(app), PTADVISE_VERSION); });
}

}  // namespace ptadvise::cli
