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
  cmd->add_option("trace", options->trace, "Trace file (.json, .json.gz)")->required();
  cmd->add_option("--apply", options->apply,
                  "Rule id, rule name or finding fingerprint to fix (repeatable); default: every finding");
  cmd->add_option("--format", options->format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([options] { exit_code() = run_whatif(*options, std::cout, std::cerr); });
}

}  // namespace ptadvise::cli
