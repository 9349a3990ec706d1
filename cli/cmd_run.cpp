// `ptadvise run`: record a run of an unmodified program, then check the traces it wrote.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"
#include "ptadvise/advisor.h"
#include "ptadvise/capture.h"
#include "ptadvise/io.h"
#include "ptadvise/visible_text.h"

namespace ptadvise::cli {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string out_dir = "ptadvise-traces";
  std::string backend = "cupti";
  int skip_steps = 2;
  int steps = 5;
  CheckOptions check;  // how the recorded traces are checked, as `ptadvise check` takes them
};

std::string self_executable() {
  std::error_code error;
  auto path = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string("ptadvise") : path.string();
}

std::string join(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

std::string describe_outcome(const ChildOutcome& outcome) {
  if (outcome.signal != 0) {
    const char* name = strsignal(outcome.signal);
    return "was killed by signal " + std::to_string(outcome.signal) + (name != nullptr ? std::string(" (") + name + ")" : "") +
           "; exit code " + std::to_string(outcome.exit_code);
  }
  return "exited with code " + std::to_string(outcome.exit_code);
}

int run(const RunOptions& options, const std::vector<std::string>& command) {
  if (command.empty()) {
    print_error("no command to run: ptadvise run [OPTIONS] -- COMMAND [ARGS...]");
    return kExitInputError;
  }
  if (options.skip_steps < 0 || options.steps < 0) {
    print_error("--skip-steps and --steps take a number of steps >= 0");
    return kExitInputError;
  }
  // The configuration and rules that will check the traces must load before the program runs for hours.
  CheckOptions preflight = options.check;
  preflight.show_config = true;
  std::ostringstream printed_config;
  if (int code = run_check(preflight, printed_config, std::cerr); code != kExitClean) return code;

  CaptureRequest request;
  request.backend = options.backend == "torch" ? CaptureBackend::Torch : CaptureBackend::Cupti;
  request.out_dir = options.out_dir;
  request.skip_steps = options.skip_steps;
  request.steps = options.steps;
  request.command = command;

  if (request.backend == CaptureBackend::Cupti) {
    DriverProbe driver = probe_cuda_driver();
    if (!driver.usable) {
      print_error(driver.message +
                  ": CUPTI capture needs an NVIDIA GPU; use `ptadvise run --capture torch -- python3 SCRIPT` "
                  "or record with torch.profiler and run `ptadvise check TRACE`");
      return kExitCaptureFailure;
    }
  }
  auto planned = plan_launch(request, locate_capture_install(self_executable()),
                             [](const char* name) { return std::getenv(name); });
  if (auto* failure = std::get_if<CaptureError>(&planned)) {
    print_error(failure->message);
    return failure->exit_code;
  }
  LaunchPlan& plan = std::get<LaunchPlan>(planned);
  // A report meant for a file or a machine: the program's own output (a training log) goes to stderr.
  const std::string& format = options.check.format;
  plan.stdout_to_stderr = format != "text" && format != "github";

  std::error_code error;
  fs::create_directories(request.out_dir, error);
  if (error || !fs::is_directory(request.out_dir)) {
    print_error("cannot create the output directory '" + request.out_dir + "': " + error.message());
    return kExitInputError;
  }
  // A run that cannot leave its trace anywhere is refused before the program starts, not after an hour.
  {
    AtomicFile probe(request.out_dir + "/.ptadvise-write-test");
    if (probe.error()) {
      print_error("cannot write into the output directory '" + request.out_dir + "': " + *probe.error());
      return kExitInputError;
    }
  }
  DirectorySnapshot before = snapshot_directory(request.out_dir);
  std::cerr << "ptadvise: recording (" << options.backend << ") into " << request.out_dir << ": " << join(command)
            << std::endl;
  ChildOutcome outcome = run_child(plan);
  if (!outcome.start_error.empty()) {
    print_error(outcome.start_error);
    return outcome.exit_code;
  }
  CaptureOutputs outputs = collect_outputs(request.out_dir, before);
  for (const std::string& note : outputs.notes) print_warning(note);
  for (const std::string& partial : outputs.incomplete) {
    print_warning(partial + ": the process ended before its trace was complete (killed?); it is not checked");
  }
  bool failed = outcome.exit_code != 0;
  if (failed) print_error("the command " + describe_outcome(outcome));
  if (outputs.traces.empty()) {
    if (failed) return outcome.exit_code;
    print_error(request.backend == CaptureBackend::Cupti
                    ? "no trace was written: the program did not use CUDA, or every process ran untraced (see above)"
                    : "no trace was written: the script made fewer optimizer steps than --skip-steps, or it "
                      "has no optimizer (try --skip-steps 0)");
    return kExitCaptureFailure;
  }
  std::cerr << "ptadvise: " << outputs.traces.size() << " trace" << (outputs.traces.size() == 1 ? "" : "s")
            << " written" << std::endl;
  for (const std::string& trace : outputs.traces) std::cerr << "  " << visible_text(trace) << '\n';
  CheckOptions check = options.check;
  check.traces = outputs.traces;
  std::cout.flush();
  int check_code = run_check(check, std::cout, std::cerr);
  // The program's own failure wins over findings: CI must see it.
  return failed ? outcome.exit_code : check_code;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Record a run without code changes (CUPTI, or torch.profiler for Python scripts), then check it");
  cmd->add_option("--out", options->out_dir, "directory for the traces (created if missing)")
      ->capture_default_str();
  cmd->add_option("--capture", options->backend,
                  "cupti: inject the CUPTI capture library (needs an NVIDIA GPU and driver); torch: run the "
                  "Python script under torch.profiler (works on CPU-only PyTorch)")
      ->check(CLI::IsMember({"cupti", "torch"}))
      ->capture_default_str();
  cmd->add_option("--skip-steps", options->skip_steps,
                  "training steps to leave out before recording (warm-up); a step ends when every optimizer has "
                  "stepped; Python programs only")
      ->capture_default_str();
  cmd->add_option("--steps", options->steps,
                  "training steps to record, 0 = all until exit; Python programs only")
      ->capture_default_str();
  // The check of the recorded traces takes the common options of `ptadvise check`.
  cmd->add_option("--format", options->check.format, "output format of the check (text, json, sarif, github, "
                                                     "junit, markdown)")
      ->capture_default_str();
  cmd->add_option("--fail-on", options->check.fail_on, "lowest severity that fails the check (info, warning, error)");
  cmd->add_flag("--exit-zero", options->check.exit_zero, "report findings without failing");
  cmd->add_option("--config", options->check.config_path, "configuration file (default: .ptadvise.yaml upward)");
  cmd->add_option("--baseline", options->check.baseline_path, "only findings not in this baseline fail");
  cmd->footer(
      "Example: ptadvise run --capture torch -- python3 train.py --epochs 1\n"
      "The command's own failure is reported and its exit code returned (128+N when killed by signal N);\n"
      "3 when nothing could be recorded (no GPU/driver for cupti, no trace written).\n"
      "INT, TERM, HUP, QUIT, USR1 and USR2 sent to ptadvise are forwarded to the program; signals ignored\n"
      "when ptadvise starts stay ignored in it (nohup); if ptadvise dies, the program gets SIGTERM.\n"
      "An --out directory that cannot be written is refused (exit 2) before the program starts.\n"
      "With --format json, sarif, junit or markdown the program's standard output goes to standard error,\n"
      "so that standard output holds the report alone (e.g. `ptadvise run --format sarif -- ... > r.sarif`).\n"
      "--capture torch records every Python process of the program that makes optimizer steps (the ranks of\n"
      "torch.multiprocessing.spawn, named by their process group's rank); a program that runs torch.profiler\n"
      "itself has its own exported trace checked.");
  auto command = std::make_shared<std::vector<std::string>>();
  // After `--` everything is the program's own (`-- python3 train.py --lr 0.1`).
  cmd->add_option("command", *command, "the program to record and its arguments, after `--`");
  cmd->callback([options, command] { exit_code() = run(*options, *command); });
}

}  // namespace ptadvise::cli
