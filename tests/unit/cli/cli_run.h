// Runs the built `ptadvise` binary, capturing exit code, stdout and stderr (shared by the CLI tests).
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

// Runs the CLI in `cwd` with NO_COLOR unset so colour decisions come from the flags alone.
inline Run ptadvise_cli(const std::string& args, const std::string& cwd, const std::string& env = "") {
  TempDir capture;
  std::string command = "cd '" + cwd + "' && env -u NO_COLOR -u FORCE_COLOR -u CLICOLOR_FORCE -u GITHUB_STEP_SUMMARY " +
                        env + " '" PTADVISE_BINARY "' " + args + " >'" + capture.file("out") + "' 2>'" +
                        capture.file("err") + "'";
  int status = std::system(command.c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_file(capture.file("out"));
  run.err = read_file(capture.file("err"));
  return run;
}

}  // namespace ptadvise::testing
