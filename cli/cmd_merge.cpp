#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "commands.h"
#include "ptadvise/advisor.h"

namespace ptadvise::cli {

// `merge DIGEST...`: the job report from per-rank digests written by `check --digest-out` (on other
// machines, by a scheduler's array job). The same pipeline as `check`, fed digests instead of traces.
void add_merge_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  auto outputs = std::make_shared<std::vector<std::string>>();
  auto fail_on = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "merge", "Report a distributed job from per-rank digests (written by `check --digest-out`); see docs/DISTRIBUTED.md");
  cmd->add_option("digests", options->traces, "Digest files, one per rank")->required();
  add_rules_option(*cmd, options->rule_directories);
  add_config_option(*cmd, options->config_path);
  cmd->add_option("--format", options->format, "Output on stdout: text, json, sarif, github, junit, markdown")
      ->capture_default_str();
  cmd->add_option("--output", *outputs, "Also write FORMAT=FILE (repeatable)")->allow_extra_args(false);
  cmd->add_option("--fail-on", *fail_on, "Lowest severity that fails the run: info, warning (default), error");
  cmd->add_flag("--exit-zero", options->exit_zero, "Exit 0 even when findings fail (input errors still exit 2)");
  cmd->add_option("--baseline", options->baseline_path, "Accepted findings: only findings not in FILE fail");
  cmd->add_option("--color", options->color, "Colour text output: auto, always, never")->capture_default_str();
  add_accept_partial_flag(*cmd, options->accept_partial);
  cmd->callback([options, outputs, fail_on] {
    if (!parse_output_options(*outputs, options->outputs)) return;
    if (!fail_on->empty()) options->fail_on = *fail_on;
    options->inputs_are_digests = true;
    exit_code() = run_check(*options, std::cout, std::cerr);
  });
}

}  // namespace ptadvise::cli
