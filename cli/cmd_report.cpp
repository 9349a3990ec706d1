// `ptadvise report TRACE… -o FILE`: the HTML report, i.e. `check --output html=FILE` without the gate.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "ptadvise/advisor.h"

namespace ptadvise::cli {

void add_report_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  auto out_path = std::make_shared<std::string>("ptadvise-report.html");
  auto* cmd = app.add_subcommand("report", "Write a self-contained HTML report with charts (opens offline)");
  cmd->add_option("traces", options->traces, "Trace files (.json, .json.gz) or directories of per-rank traces")
      ->required();
  cmd->add_option("-o,--output", *out_path, "HTML file to write")->capture_default_str();
  add_rules_option(*cmd, options->rule_directories);
  add_config_option(*cmd, options->config_path);
  cmd->add_option("--baseline", options->baseline_path, "Accepted findings: marked as such in the report");
  cmd->callback([options, out_path] {
    options->outputs.emplace_back("html", *out_path);
    options->format = "json";  // the same document, discarded: the file is the output
    options->exit_zero = true;  // a report is not a gate; input errors still exit 2
    std::ostringstream discarded;
    exit_code() = run_check(*options, discarded, std::cerr);
    if (exit_code() == kExitClean) std::cerr << "ptadvise: wrote " << *out_path << "\n";
  });
}

}  // namespace ptadvise::cli
