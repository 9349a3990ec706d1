// Subcommands of the ptadvise CLI. Each file cmd_*.cpp adds one or more subcommands; this layer parses
// arguments, calls the libraries and maps outcomes to exit codes. It holds no analysis of its own.
#pragma once

#include <string_view>

namespace CLI {
class App;
}

namespace ptadvise::cli {

// Exit codes shared by every command (see README "Exit codes").
inline constexpr int kExitClean = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitInputError = 2;
inline constexpr int kExitCaptureFailure = 3;

// The process exit code, set by the command that ran.
int& exit_code();

// Prints "ptadvise: <message>" on stderr.
void print_error(std::string_view message);
void print_warning(std::string_view message);

void add_summary_command(CLI::App& app);  // cmd_summary.cpp
void add_check_command(CLI::App& app);    // cmd_check.cpp
void add_rules_commands(CLI::App& app);   // cmd_rules.cpp: `rules` and `explain`
void add_diff_command(CLI::App& app);     // cmd_diff.cpp
void add_run_command(CLI::App& app);      // cmd_run.cpp
void add_version_flag(CLI::App& app);     // version.cpp: --version with git commit and rule set
void add_generate_commands(CLI::App& app);  // version.cpp: `completion SHELL` and `man`, from these definitions
void add_report_command(CLI::App& app);   // cmd_report.cpp
void add_whatif_command(CLI::App& app);   // cmd_whatif.cpp

}  // namespace ptadvise::cli
