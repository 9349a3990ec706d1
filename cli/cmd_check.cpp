#include <CLI/CLI.hpp>

#include "commands.h"

namespace ptadvise::cli {

// Placeholder until this command is implemented: it refuses to run rather than pretend.
void add_check_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "(not available yet)");
  cmd->allow_extras();
  cmd->callback([] {
    print_error("'check' is not available in this build yet");
    exit_code() = kExitInputError;
  });
}

}  // namespace ptadvise::cli
