#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "commands.h"
#include "ptadvise/advisor.h"

namespace ptadvise::cli {

void add_diff_command(CLI::App& app) {
  auto options = std::make_shared<DiffOptions>();
  auto* cmd = app.add_subcommand("diff", "Compare two traces of the same program: step time, findings, kernels, ops");
  cmd->add_option("base", options->base_trace, "The reference trace (file or per-rank directory)")->required();
  cmd->add_option("new", options->new_trace, "The trace to compare with it")->required();
  cmd->add_option("--max-regression", options->max_regression_pct,
                  "Exit 1 when the median step time grew by more than PCT percent")
      ->capture_default_str();
  cmd->add_option("--format", options->format, "text, json or markdown (for pull-request comments)")->capture_default_str();
  cmd->add_option("--top", options->top, "How many kernel and op changes to list")->capture_default_str();
  add_accept_partial_flag(*cmd, options->accept_partial);
  cmd->add_option("--rules", options->rule_directories, "Extra rule directory (repeatable)")->allow_extra_args(false);
  add_kernel_families_option(*cmd, options->kernel_family_tables);
  cmd->add_option("--config", options->config_path, "Configuration file (default: .ptadvise.yaml, searched upward)");
  cmd->callback([options] { exit_code() = run_diff(*options, std::cout, std::cerr); });
}

}  // namespace ptadvise::cli
