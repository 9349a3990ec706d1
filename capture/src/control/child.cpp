// Running the captured program as a child: fork/exec, signal forwarding, exit status.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ptadvise/capture.h"

namespace ptadvise {

namespace {

std::atomic<pid_t> g_child{0};
// Signals that arrived before the child's pid was known (the handlers go in before fork): sent as soon as
// it is. A bit per entry of kForwardedSignals.
std::atomic<unsigned> g_pending{0};
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};
constexpr int kSignalCount = static_cast<int>(sizeof kForwardedSignals / sizeof kForwardedSignals[0]);
static_assert(std::atomic<unsigned>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "used in a signal handler");

// Sends what is pending to the child, once: whoever empties g_pending sends (async-signal-safe).
void send_pending(pid_t child) {
  unsigned bits = g_pending.exchange(0);
  for (int k = 0; k < kSignalCount; ++k) {
    if ((bits & (1u << k)) != 0) kill(child, kForwardedSignals[k]);
  }
}

// A signal the terminal sends goes to the whole foreground process group, child included; only signals
// aimed at ptadvise itself (kill, a batch scheduler) need forwarding, or the child would get two.
void forward_signal(int signal, siginfo_t* info, void* /*context*/) {
  if (info == nullptr) return;
  if (info->si_code != SI_USER && info->si_code != SI_QUEUE && info->si_code != SI_TKILL) return;
  for (int k = 0; k < kSignalCount; ++k) {
    if (kForwardedSignals[k] == signal) g_pending.fetch_or(1u << k);
  }
  // Recorded first, then the pid read: either this handler sees the pid, or run_child, which stores the
  // pid before it empties g_pending, sees the bit.
  pid_t child = g_child.load();
  if (child > 0) send_pending(child);
}

}  // namespace

ChildOutcome run_child(const LaunchPlan& plan) {
  ChildOutcome outcome;
  if (plan.argv.empty()) {
    outcome.exit_code = 127;
    outcome.start_error = "no command";
    return outcome;
  }
  std::vector<char*> argv;
  for (const std::string& arg : plan.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  // The child's environment is built here: after fork only async-signal-safe calls are made (no setenv,
  // which allocates and could deadlock on a lock another thread held at fork).
  std::vector<std::string> environment_entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& [planned, value] : plan.environment) replaced = replaced || planned == name;
    if (!replaced) environment_entries.emplace_back(text);
  }
  for (const auto& [name, value] : plan.environment) environment_entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : environment_entries) envp.push_back(entry.data());
  envp.push_back(nullptr);

  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    outcome.exit_code = 127;
    outcome.start_error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return outcome;
  }
  // Handlers go in before fork so no signal is lost between fork and waitpid; one that arrives before the
  // child's pid is known waits in g_pending.
  g_pending = 0;
  struct sigaction forward {};
  forward.sa_sigaction = forward_signal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  // A signal ignored when ptadvise started (`nohup ptadvise run ...`) stays ignored, here and in the child.
  struct sigaction previous[kSignalCount];
  for (int k = 0; k < kSignalCount; ++k) {
    sigaction(kForwardedSignals[k], nullptr, &previous[k]);
    if (previous[k].sa_handler != SIG_IGN) sigaction(kForwardedSignals[k], &forward, nullptr);
  }

  // Blocked across fork: the child must not run the forwarder (its copy knows no child and would swallow
  // a signal forwarded before exec); what arrives meanwhile waits, in the parent for the forwarder, in the
  // child for the restored dispositions.
  sigset_t forwarded, caller_mask;
  sigemptyset(&forwarded);
  for (int signal : kForwardedSignals) sigaddset(&forwarded, signal);
  pthread_sigmask(SIG_BLOCK, &forwarded, &caller_mask);

  const pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    // The dispositions from before the forwarder: ignored stays ignored through exec, the rest default.
    for (int k = 0; k < kSignalCount; ++k) sigaction(kForwardedSignals[k], &previous[k], nullptr);
    pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    // If ptadvise dies (kill -9, the OOM killer), the program gets SIGTERM instead of running on
    // unobserved; the parent may already be gone before the request took effect.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    if (plan.stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) _exit(127);
    close(error_pipe[0]);
    execvpe(argv[0], argv.data(), envp.data());
    int exec_errno = errno;
    ssize_t ignored = write(error_pipe[1], &exec_errno, sizeof exec_errno);
    (void)ignored;
    _exit(127);
  }
  close(error_pipe[1]);
  if (child < 0) {
    close(error_pipe[0]);
    for (int k = 0; k < kSignalCount; ++k) sigaction(kForwardedSignals[k], &previous[k], nullptr);
    pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    outcome.exit_code = 127;
    outcome.start_error = std::string("cannot fork: ") + std::strerror(errno);
    return outcome;
  }
  g_child = child;
  send_pending(child);
  pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = read(error_pipe[0], &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  close(error_pipe[0]);

  int status = 0;
  pid_t waited = 0;
  do {
    waited = waitpid(child, &status, 0);
  } while (waited < 0 && errno == EINTR);
  g_child = 0;
  for (int k = 0; k < kSignalCount; ++k) sigaction(kForwardedSignals[k], &previous[k], nullptr);

  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    outcome.exit_code = 127;
    outcome.start_error = "cannot run '" + plan.argv[0] + "': " + std::strerror(exec_errno);
    return outcome;
  }
  if (waited < 0) {
    outcome.exit_code = 127;
    outcome.start_error = std::string("lost the child process: ") + std::strerror(errno);
  } else if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
    outcome.exit_code = 128 + outcome.signal;
  }
  return outcome;
}

}  // namespace ptadvise
