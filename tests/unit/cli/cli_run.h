// Runs the built `ptadvise` binary or a shell command line, capturing exit code, stdout and stderr (shared by
// the CLI tests).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "../advisor/temp_dir.h"

namespace ptadvise::testing {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a shell command line with its stdout and stderr captured.
inline Run run_shell(const std::string& command_line) {
  TempDir capture;
  std::string command = command_line + " >'" + capture.file("out") + "' 2>'" + capture.file("err") + "'";
  int status = std::system(command.c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;  // -1 when killed by a signal
  run.out = read_file(capture.file("out"));
  run.err = read_file(capture.file("err"));
  return run;
}

// Runs the CLI in `cwd` with NO_COLOR unset so colour decisions come from the flags alone.
inline Run ptadvise_cli(const std::string& args, const std::string& cwd, const std::string& env = "") {
  return run_shell("cd '" + cwd + "' && env -u NO_COLOR -u FORCE_COLOR -u CLICOLOR_FORCE -u GITHUB_STEP_SUMMARY " +
                   env + " '" PTADVISE_BINARY "' " + args);
}

}  // namespace ptadvise::testing
