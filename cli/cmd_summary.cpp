// `ptadvise summary TRACE...`: what a trace contains (devices, steps, GPU busy share and breakdown, the
// idle ledger by cause, kernel counts, the critical path of the steps' replay, top kernels and CPU ops), as
// text or JSON.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "commands.h"
#include "ptadvise/advisor.h"
#include "ptadvise/analysis.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"
#include "ptadvise/summary_printer.h"

namespace ptadvise::cli {
namespace {

struct SummaryOptions {
  std::vector<std::string> traces;
  std::string format = "text";
  size_t top = 10;
  std::vector<std::string> kernel_family_tables;
  bool accept_partial = false;
};

void run_summary(const SummaryOptions& options) {
  auto loaded = load_traces_with_progress(options.traces, args_to_keep(nullptr));
  if (auto* error = std::get_if<LoadError>(&loaded)) {
    print_error(error->message);
    exit_code() = kExitInputError;
    return;
  }
  auto kernels = kernel_classifier_with(options.kernel_family_tables);
  if (auto* error = std::get_if<KernelTableError>(&kernels)) {
    print_error(error->message);
    exit_code() = kExitInputError;
    return;
  }
  const auto& timelines = std::get<std::vector<Timeline>>(loaded);
  std::vector<Summary> summaries;
  std::vector<StepPrediction> replays;  // the unchanged replay of each: its critical path
  for (const Timeline& timeline : timelines) {
    for (const std::string& warning : timeline.stats.warnings) print_warning(warning);
    if (auto partial = partial_trace_problem(timeline)) {
      if (!options.accept_partial) {
        print_error(*partial);
        exit_code() = kExitInputError;
        return;
      }
      print_warning(*partial);
    }
    Analysis analysis = analyze(timeline, std::get<KernelClassifier>(kernels));
    summaries.push_back(summarize(analysis, options.top));
    replays.push_back(WhatIf(analysis).predict_steps({}));
  }
  if (options.format == "json") {
    std::cout << (summaries.size() == 1 ? summary_json(summaries.front(), 2, &replays.front())
                                        : summaries_json(summaries, 2, &replays))
              << '\n';
  } else {
    for (size_t i = 0; i < summaries.size(); ++i) {
      if (i > 0) std::cout << '\n';
      std::cout << summary_text(summaries[i], &replays[i]);
    }
  }
  exit_code() = kExitClean;
}

}  // namespace

void add_summary_command(CLI::App& app) {
  auto options = std::make_shared<SummaryOptions>();
  auto* cmd = app.add_subcommand(
      "summary",
      "Describe traces: devices, steps and step time, GPU busy share and breakdown, idle time by cause,\n"
      "kernels per step and the share under 10 us, the critical path of the replayed steps by category\n"
      "(docs/WHATIF.md), top kernels and CPU ops.");
  cmd->add_option("traces", options->traces, "Trace files (.json, .json.gz; - reads stdin, pipes work) or directories of per-rank traces")
      ->required();
  add_kernel_families_option(*cmd, options->kernel_family_tables);
  cmd->add_option("--format", options->format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--top", options->top, "How many kernels and CPU ops to list")->capture_default_str();
  add_accept_partial_flag(*cmd, options->accept_partial);
  cmd->callback([options] { run_summary(*options); });
}

}  // namespace ptadvise::cli
