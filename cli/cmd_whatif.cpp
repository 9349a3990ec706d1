// `ptadvise whatif TRACE [--apply RULE_OR_FINDING...]`: measured, replayed and predicted step times.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "commands.h"
#include "ptadvise/advisor.h"

namespace ptadvise::cli {

void add_whatif_command(CLI::App& app) {
  auto options = std::make_shared<WhatifOptions>();
  auto* cmd = app.add_subcommand(
      "whatif",
      "Predict the step time after fixes: replays the trace's dependency graph unchanged (measured vs\n"
      "replayed step) and with the transforms of the chosen findings' rules, and prints the critical path\n"
      "before and after (docs/WHATIF.md).");
  cmd->add_option("trace", options->trace, "Trace file (.json, .json.gz; a directory: its first trace)")->required();
  cmd->add_option("--apply", options->apply,
                  "Rule id, rule name or finding fingerprint to fix (repeatable); default: every finding");
  cmd->add_option("--format", options->format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  // The findings are `check`'s for the same configuration: the same selection options.
  add_rules_option(*cmd, options->rule_directories);
  add_kernel_families_option(*cmd, options->kernel_family_tables);
  add_config_option(*cmd, options->config_path);
  add_selection_options(*cmd, options->select, options->ignore);
  auto source_root = std::make_shared<std::string>();
  cmd->add_option("--source-root", *source_root,
                  "Where the traced program's sources are, for suppression comments (default: the working directory)");
  cmd->add_flag("--accept-partial", options->accept_partial,
                "Analyse a trace of which more than 5% could not be read (else exit 2)");
  cmd->callback([options, source_root] {
    if (!source_root->empty()) options->source_root = *source_root;
    exit_code() = run_whatif(*options, std::cout, std::cerr);
  });
}

}  // namespace ptadvise::cli
