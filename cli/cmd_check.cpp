#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "commands.h"
#include "ptadvise/advisor.h"

namespace ptadvise::cli {

// Parses `check` arguments into CheckOptions; the pipeline itself is ptadvise::run_check (advisor.h),
// shared with `run`.
void add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  auto outputs = std::make_shared<std::vector<std::string>>();
  auto fail_on = std::make_shared<std::string>();
  auto source_root = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("check", "Lint traces and report ranked findings with their estimated saving");
  cmd->add_option("traces", options->traces, "Trace files (.json, .json.gz; - reads stdin, pipes work) or directories of per-rank traces");
  add_rules_option(*cmd, options->rule_directories);
  add_kernel_families_option(*cmd, options->kernel_family_tables);
  add_config_option(*cmd, options->config_path);
  cmd->add_option("--format", options->format, "Output on stdout: text, json, sarif, github, junit, markdown, html")
      ->capture_default_str();
  cmd->add_option("--output", *outputs, "Also write FORMAT=FILE (repeatable), e.g. --output sarif=ptadvise.sarif")
      ->allow_extra_args(false);
  cmd->add_option("--fail-on", *fail_on, "Lowest severity that fails the run: info, warning (default), error");
  cmd->add_flag("--exit-zero", options->exit_zero, "Exit 0 even when findings fail (input errors still exit 2)");
  add_accept_partial_flag(*cmd, options->accept_partial);
  cmd->add_option("--baseline", options->baseline_path, "Accepted findings: only findings not in FILE fail");
  cmd->add_option("--write-baseline", options->write_baseline_path, "Write the current findings to FILE as a baseline");
  cmd->add_flag("--prune-baseline", options->prune_baseline, "Rewrite --baseline FILE without its stale entries");
  cmd->add_option("--annotate", options->annotate_path,
                  "Write a copy of the trace with the findings on their own track (OUT.json or OUT.json.gz); "
                  "each rank of a multi-rank job gets OUT.rankN.json");
  add_selection_options(*cmd, options->select, options->ignore);
  cmd->add_flag("--show-config", options->show_config, "Print the effective configuration and exit");
  cmd->add_option("--color", options->color,
                  "Colour text output: auto (NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE, else a terminal), always, never")
      ->capture_default_str();
  auto concise = std::make_shared<bool>(false);
  auto verbose = std::make_shared<bool>(false);
  auto* concise_flag = cmd->add_flag("--concise", *concise, "Text output: one line per finding");
  cmd->add_flag("--verbose", *verbose, "Text output: every evidence item and how each saving was estimated")
      ->excludes(concise_flag);
  cmd->add_option("--source-root", *source_root,
                  "Where the traced program's sources are, for suppression comments and repo-relative paths "
                  "(default: the working directory)");
  cmd->add_option("--digest-out", options->digest_out,
                  "Also write each rank's digest (a few KB) to FILE, for `ptadvise merge` (several traces: "
                  "FILE.rankN.json)");
  cmd->add_option("--threads", options->threads, "Traces loaded at once (default: one per core)");
  auto no_whatif = std::make_shared<bool>(false);
  cmd->add_flag("--no-whatif", *no_whatif,
                "Skip the replay of the steps: no predicted step after all fixes, no critical path; each finding's "
                "predicted step is the period minus its saving (docs/WHATIF.md)");
  cmd->callback([options, outputs, fail_on, source_root, concise, verbose, no_whatif] {
    if (*no_whatif) options->whatif = false;
    if (*concise) options->detail = TextDetail::Concise;
    if (*verbose) options->detail = TextDetail::Verbose;
    if (!parse_output_options(*outputs, options->outputs)) return;
    if (!fail_on->empty()) options->fail_on = *fail_on;
    if (!source_root->empty()) options->source_root = *source_root;
    exit_code() = run_check(*options, std::cout, std::cerr);
  });
}

}  // namespace ptadvise::cli
