#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "commands.h"

namespace ptadvise::cli {

int& exit_code() {
  static int code = kExitClean;
  return code;
}

void print_error(std::string_view message) { std::cerr << "ptadvise: error: " << message << '\n'; }
void print_warning(std::string_view message) { std::cerr << "ptadvise: warning: " << message << '\n'; }

bool parse_output_options(const std::vector<std::string>& outputs, std::vector<std::pair<std::string, std::string>>& parsed) {
  for (const auto& output : outputs) {
    auto equals = output.find('=');
    if (equals == std::string::npos) {
      print_error("--output: expected FORMAT=FILE, got '" + output + "'");
      exit_code() = kExitInputError;
      return false;
    }
    parsed.emplace_back(output.substr(0, equals), output.substr(equals + 1));
  }
  return true;
}

}  // namespace ptadvise::cli

int main(int argc, char** argv) {
  using namespace ptadvise::cli;
  CLI::App app{
      "ptadvise finds the known performance mistakes of PyTorch training runs in profiler traces,\n"
      "estimates what each one costs per step, ranks them and tells you the fix."};
  app.name("ptadvise");
  app.set_version_flag("--version", std::string("ptadvise ") + PTADVISE_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage/config/rule/trace input error,\n"
      "3 capture failure. `ptadvise COMMAND --help` tells more; `ptadvise explain RULE` documents a rule.");
  add_check_command(app);
  add_summary_command(app);
  add_rules_commands(app);
  add_diff_command(app);
  add_run_command(app);
  add_merge_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitInputError;
  }
  std::fflush(stdout);
  return exit_code();
}
