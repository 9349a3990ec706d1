// Runs Debian's python3 (not a pyenv one) on a short script, for validating printer output.
#pragma once

#include <cstdlib>
#include <string>

namespace ptadvise::testing {

inline bool python_has(const std::string& module) {
  std::string command = "/usr/bin/python3 -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

// Exit status of `/usr/bin/python3 -c SCRIPT ARGS...`; the script must not contain single quotes.
inline int run_python(const std::string& script, const std::string& args) {
  std::string command = "/usr/bin/python3 -c '" + script + "' " + args;
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Exit status of `/usr/bin/python3 SCRIPT_FILE ARGS...`.
inline int run_python_file(const std::string& script_file, const std::string& args) {
  std::string command = "/usr/bin/python3 '" + script_file + "' " + args;
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace ptadvise::testing
