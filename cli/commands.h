// Subcommands of the ptadvise CLI. Each file cmd_*.cpp adds one or more subcommands; this layer parses
// arguments, calls the libraries and maps outcomes to exit codes. It holds no analysis of its own.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace ptadvise::cli {

// Exit codes shared by every command (see README "Exit codes").
inline constexpr int kExitClean = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitInputError = 2;
inline constexpr int kExitCaptureFailure = 3;
inline constexpr int kExitInternalError = 4;  // a bug in ptadvise: never a signal, never a verdict

// The process exit code, set by the command that ran.
int& exit_code();

// Prints "ptadvise: <message>" on stderr.
void print_error(std::string_view message);
void print_warning(std::string_view message);

// Splits each `--output FORMAT=FILE` into the pair run_check expects; false (error printed, exit code 2 set)
// when one has no '='.
bool parse_output_options(const std::vector<std::string>& outputs, std::vector<std::pair<std::string, std::string>>& parsed);

// Options several commands share, one definition each (shared_options.cpp). The rule options are the
// configuration that decides the findings: `whatif` takes check's so that its findings are check's.
void add_rules_option(CLI::App& cmd, std::vector<std::string>& directories);   // --rules DIR
void add_kernel_families_option(CLI::App& cmd, std::vector<std::string>& tables);  // --kernel-families FILE
void add_config_option(CLI::App& cmd, std::string& path);                        // --config FILE
void add_selection_options(CLI::App& cmd, std::vector<std::string>& select,      // --select, --ignore
                           std::vector<std::string>& ignore);
void add_accept_partial_flag(CLI::App& cmd, bool& accept_partial);               // --accept-partial

void add_summary_command(CLI::App& app);  // cmd_summary.cpp
void add_check_command(CLI::App& app);    // cmd_check.cpp
void add_rules_commands(CLI::App& app);   // cmd_rules.cpp: `rules` and `explain`
void add_diff_command(CLI::App& app);     // cmd_diff.cpp
void add_run_command(CLI::App& app);      // cmd_run.cpp
void add_version_flag(CLI::App& app);     // version.cpp: --version with git commit and rule set
void add_generate_commands(CLI::App& app);  // version.cpp: `completion SHELL` and `man`, from these definitions
void add_report_command(CLI::App& app);   // cmd_report.cpp
void add_whatif_command(CLI::App& app);   // cmd_whatif.cpp
void add_merge_command(CLI::App& app);    // cmd_merge.cpp

}  // namespace ptadvise::cli
