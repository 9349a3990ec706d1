// The command-line interface as data, read from the CLI11 definitions of every command, so that shell
// completions and the man page are generated from the same source as `--help` and cannot drift from it.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ptadvise::cli {

struct CliOption {
  std::vector<std::string> names;  // "--format", "-h"
  std::string description;
  std::string value_name;           // "TEXT", "DIR"; empty for flags
  std::vector<std::string> choices;  // from IsMember validators ("{text,json}"), else empty
  bool takes_value() const { return !value_name.empty(); }
};

struct CliCommand {
  std::string name;
  std::string description;
  std::string footer;
  std::vector<CliOption> options;
  std::vector<std::string> positionals;  // "traces", "rule" (names as in --help)
};

struct CliModel {
  std::string name;
  std::string description;
  std::string footer;
  std::vector<CliOption> options;    // global options (--help, --version)
  std::vector<CliCommand> commands;  // visible subcommands, in definition order
};

CliModel describe_cli(const CLI::App& app);

// Generators (cli_generate.cpp).
std::string bash_completion(const CliModel& model);
std::string zsh_completion(const CliModel& model);
std::string fish_completion(const CliModel& model);
std::string man_page(const CliModel& model, const std::string& version);


}  // namespace ptadvise::cli
