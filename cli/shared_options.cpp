// Options several commands share, each defined once so that its name, help text and parsing agree
// everywhere (commands.h).
#include <CLI/CLI.hpp>

#include "commands.h"

namespace ptadvise::cli {

void add_rules_option(CLI::App& cmd, std::vector<std::string>& directories) {
  cmd.add_option("--rules", directories, "Extra rule directory (repeatable), added to the shipped rules")
      ->allow_extra_args(false);
}

void add_kernel_families_option(CLI::App& cmd, std::vector<std::string>& tables) {
  cmd.add_option("--kernel-families", tables,
                 "Kernel family table (repeatable), tried before the shipped one (docs/KERNEL_FAMILIES.md)")
      ->allow_extra_args(false);
}

void add_config_option(CLI::App& cmd, std::string& path) {
  cmd.add_option("--config", path, "Configuration file (default: .ptadvise.yaml in the working directory or a parent)");
}

void add_selection_options(CLI::App& cmd, std::vector<std::string>& select, std::vector<std::string>& ignore) {
  cmd.add_option("--select", select, "Only these rules (ids, names or tags; repeatable)")
      ->allow_extra_args(false)
      ->delimiter(',');
  cmd.add_option("--ignore", ignore, "Skip these rules (ids, names or tags; repeatable)")
      ->allow_extra_args(false)
      ->delimiter(',');
}

void add_accept_partial_flag(CLI::App& cmd, bool& accept_partial) {
  cmd.add_flag("--accept-partial", accept_partial, "Analyse traces of which more than 5% could not be read (else exit 2)");
}

}  // namespace ptadvise::cli
