// Running one test case in a fresh copy of this test program: a heap that earlier tests have not used
// (their free space would serve the allocations, their frees would have moved glibc's thresholds), and
// process-wide settings (malloc policy, address-space limits) that do not leak into other tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ptadvise::testing {

// Runs the test case named `test_case` (usually declared with doctest::skip()) alone in a fresh copy of
// this program, with the environment variable `marker` set so that its body knows it is that copy (see
// running_alone). Returns its exit code, or 128 + the signal that ended it. doctest exits 0 when the
// filter matches nothing: a case whose success is 0 cannot tell that apart.
inline int run_case_alone(const std::string& test_case, const char* marker) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string filter = "--test-case=" + test_case;
    setenv(marker, "1", 1);
    execl("/proc/self/exe", "ptadvise_tests", filter.c_str(), "--no-skip=true", "--reporters=console",
          static_cast<char*>(nullptr));
    _exit(99);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether this process is the copy run_case_alone started with `marker`.
inline bool running_alone(const char* marker) { return std::getenv(marker) != nullptr; }

}  // namespace ptadvise::testing
