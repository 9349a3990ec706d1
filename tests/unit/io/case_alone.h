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

// A case's body ends its process with end_case(result): the exit code is kCaseRan + result, so that the
// exit codes doctest itself uses (0 when the filter matches nothing, 1 when an assertion failed) cannot be
// taken for a result. Results are 0 to 117.
inline constexpr int kCaseRan = 10;
inline constexpr int kCaseNotRun = -1;     // the copy exited without a result from the case's body
inline constexpr int kCaseSignalled = -2;  // the copy was ended by a signal
inline constexpr int kCaseLost = -3;       // no copy was started or waited for

// Runs the test case named `test_case` (usually declared with doctest::skip()) alone in a fresh copy of
// this program, with the environment variable `marker` set so that its body knows it is that copy (see
// running_alone). Returns the result the body gave end_case, or one of the negative codes above.
inline int run_case_alone(const std::string& test_case, const char* marker) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return kCaseLost;
  if (pid == 0) {
    const std::string filter = "--test-case=" + test_case;
    setenv(marker, "1", 1);
    execl("/proc/self/exe", "ptadvise_tests", filter.c_str(), "--no-skip=true", "--reporters=console",
          static_cast<char*>(nullptr));
    _exit(99);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return kCaseLost;
  if (!WIFEXITED(status)) return kCaseSignalled;
  const int code = WEXITSTATUS(status);
  return code >= kCaseRan && code < 128 ? code - kCaseRan : kCaseNotRun;
}

// Whether this process is the copy run_case_alone started with `marker`.
inline bool running_alone(const char* marker) { return std::getenv(marker) != nullptr; }

// Ends the copy with the case's result (0 to 117), for run_case_alone.
[[noreturn]] inline void end_case(int result) {
  std::fflush(nullptr);
  _exit(kCaseRan + result);
}

}  // namespace ptadvise::testing
