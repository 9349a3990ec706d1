// Runs a shell command line with its stdout and stderr captured, for the end-to-end CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "../advisor/temp_dir.h"

namespace ptadvise::testing {

struct ShellRun {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

inline ShellRun run_shell(const std::string& command_line) {
  TempDir capture;
  std::string command = command_line + " >'" + capture.file("out") + "' 2>'" + capture.file("err") + "'";
  int status = std::system(command.c_str());
  ShellRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_file(capture.file("out"));
  run.err = read_file(capture.file("err"));
  return run;
}

}  // namespace ptadvise::testing
