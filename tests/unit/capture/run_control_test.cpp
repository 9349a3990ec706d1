// `ptadvise run`'s in-process part: launch planning, the child process, and what a run left behind.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "ptadvise/capture.h"

namespace fs = std::filesystem;
using ptadvise::CaptureBackend;
using ptadvise::CaptureError;
using ptadvise::CaptureInstall;
using ptadvise::CaptureRequest;
using ptadvise::LaunchPlan;

namespace {

CaptureInstall fake_install() {
  CaptureInstall install;
  install.cupti_library = "/opt/ptadvise/lib/libptadvise_cupti.so";
  install.cupti_runtime = "/usr/local/cuda/lib64/libcupti.so";
  install.python_dir = "/opt/ptadvise/python";
  return install;
}

std::map<std::string, std::string> environment_of(const LaunchPlan& plan) {
  return {plan.environment.begin(), plan.environment.end()};
}

const char* no_environment(const char*) { return nullptr; }

// A fresh directory under the system's temporary directory, removed at the end of the test.
struct TemporaryDirectory {
  fs::path path;
  TemporaryDirectory() {
    path = fs::temp_directory_path() / ("ptadvise-test-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TemporaryDirectory() {
    std::error_code error;
    fs::remove_all(path, error);
  }
};

void write_test_file(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("run: Python commands are recognised by the interpreter's name") {
  CHECK(ptadvise::is_python_command({"python3", "train.py"}));
  CHECK(ptadvise::is_python_command({"/usr/bin/python3.11", "-m", "pkg"}));
  CHECK(ptadvise::is_python_command({"python"}));
  CHECK_FALSE(ptadvise::is_python_command({"torchrun", "train.py"}));
  CHECK_FALSE(ptadvise::is_python_command({"python-config"}));
  CHECK_FALSE(ptadvise::is_python_command({"./train"}));
  CHECK_FALSE(ptadvise::is_python_command({}));
}

TEST_CASE("run: the CUPTI launch injects the capture library and NVTX") {
  CaptureRequest request;
  request.out_dir = "/tmp/ptadvise-out";
  request.skip_steps = 3;
  request.steps = 4;
  request.command = {"python3", "train.py", "--lr", "0.1"};
  auto planned = ptadvise::plan_launch(request, fake_install(), [](const char* name) -> const char* {
    return std::string_view(name) == "PYTHONPATH" ? "/home/me/src" : nullptr;
  });
  REQUIRE(std::holds_alternative<LaunchPlan>(planned));
  const LaunchPlan& plan = std::get<LaunchPlan>(planned);
  CHECK(plan.argv == request.command);
  auto env = environment_of(plan);
  CHECK(env.at("CUDA_INJECTION64_PATH") == "/opt/ptadvise/lib/libptadvise_cupti.so");
  CHECK(env.at("NVTX_INJECTION64_PATH") == "/usr/local/cuda/lib64/libcupti.so");
  CHECK(env.at("PTADVISE_CAPTURE_DIR") == "/tmp/ptadvise-out");
  CHECK(env.at("PTADVISE_CAPTURE_BACKEND") == "cupti");
  CHECK(env.at("PTADVISE_SKIP_STEPS") == "3");
  CHECK(env.at("PTADVISE_STEPS") == "4");
  CHECK(env.at("PTADVISE_CAPTURE_DEFER") == "1");  // the shim starts recording after the warm-up
  CHECK(env.at("PYTHONPATH") == "/opt/ptadvise/python:/home/me/src");

  // Not Python: no shim, no deferral (nothing would start the recording).
  request.command = {"./train_cpp", "--steps", "10"};
  auto native = std::get<LaunchPlan>(ptadvise::plan_launch(request, fake_install(), no_environment));
  auto native_env = environment_of(native);
  CHECK(native_env.count("PYTHONPATH") == 0);
  CHECK(native_env.count("PTADVISE_CAPTURE_DEFER") == 0);
  CHECK(native_env.at("CUDA_INJECTION64_PATH") == "/opt/ptadvise/lib/libptadvise_cupti.so");
}

TEST_CASE("run: a relative output directory becomes absolute for the child") {
  CaptureRequest request;
  request.out_dir = "traces/run1";
  request.command = {"./a.out"};
  auto plan = std::get<LaunchPlan>(ptadvise::plan_launch(request, fake_install(), no_environment));
  CHECK(environment_of(plan).at("PTADVISE_CAPTURE_DIR") == (fs::current_path() / "traces/run1").string());
}

TEST_CASE("run: the torch backend puts its runner after the interpreter's own options") {
  CaptureRequest request;
  request.backend = CaptureBackend::Torch;
  request.out_dir = "/tmp/out";
  request.command = {"/usr/bin/python3", "-u", "-W", "ignore", "train.py", "--epochs", "1"};
  auto plan = std::get<LaunchPlan>(ptadvise::plan_launch(request, fake_install(), no_environment));
  CHECK(plan.argv == std::vector<std::string>{"/usr/bin/python3", "-u", "-W", "ignore",
                                              "/opt/ptadvise/python/ptadvise_torch_run.py", "train.py", "--epochs",
                                              "1"});
  auto env = environment_of(plan);
  CHECK(env.at("PTADVISE_CAPTURE_BACKEND") == "torch");
  CHECK(env.count("CUDA_INJECTION64_PATH") == 0);
  CHECK(env.at("PYTHONPATH") == "/opt/ptadvise/python");

  request.command = {"python3", "-m", "trainer.main", "--fast"};
  plan = std::get<LaunchPlan>(ptadvise::plan_launch(request, fake_install(), no_environment));
  CHECK(plan.argv == std::vector<std::string>{"python3", "/opt/ptadvise/python/ptadvise_torch_run.py", "-m",
                                              "trainer.main", "--fast"});
}

TEST_CASE("run: launch errors name what is wrong, with the right exit code") {
  CaptureRequest request;
  request.backend = CaptureBackend::Torch;
  request.out_dir = "/tmp/out";
  request.command = {"./train_cpp"};
  auto planned = ptadvise::plan_launch(request, fake_install(), no_environment);
  REQUIRE(std::holds_alternative<CaptureError>(planned));
  CHECK(std::get<CaptureError>(planned).exit_code == 2);
  CHECK(std::get<CaptureError>(planned).message.find("Python interpreter") != std::string::npos);

  request.command = {"python3", "-u"};
  planned = ptadvise::plan_launch(request, fake_install(), no_environment);
  REQUIRE(std::holds_alternative<CaptureError>(planned));
  CHECK(std::get<CaptureError>(planned).exit_code == 2);

  request.backend = CaptureBackend::Cupti;
  request.command = {"./train_cpp"};
  CaptureInstall without_library = fake_install();
  without_library.cupti_library.clear();
  planned = ptadvise::plan_launch(request, without_library, no_environment);
  REQUIRE(std::holds_alternative<CaptureError>(planned));
  CHECK(std::get<CaptureError>(planned).exit_code == 3);
  CHECK(std::get<CaptureError>(planned).message.find("--capture torch") != std::string::npos);

  request.command.clear();
  planned = ptadvise::plan_launch(request, fake_install(), no_environment);
  REQUIRE(std::holds_alternative<CaptureError>(planned));
  CHECK(std::get<CaptureError>(planned).exit_code == 2);
}

TEST_CASE("run: the child's exit code, death by signal and start failures") {
  LaunchPlan plan;
  plan.argv = {"/bin/sh", "-c", "exit 7"};
  auto outcome = ptadvise::run_child(plan);
  CHECK(outcome.exit_code == 7);
  CHECK(outcome.signal == 0);
  CHECK(outcome.start_error.empty());

  plan.argv = {"/bin/sh", "-c", "kill -TERM $$"};
  outcome = ptadvise::run_child(plan);
  CHECK(outcome.signal == 15);
  CHECK(outcome.exit_code == 143);

  plan.argv = {"/bin/sh", "-c", "test \"$PTADVISE_TEST_VALUE\" = 'a b'"};
  plan.environment = {{"PTADVISE_TEST_VALUE", "a b"}};
  CHECK(ptadvise::run_child(plan).exit_code == 0);
  CHECK(std::getenv("PTADVISE_TEST_VALUE") == nullptr);  // set in the child only

  plan.argv = {"/nonexistent/ptadvise-no-such-program"};
  outcome = ptadvise::run_child(plan);
  CHECK(outcome.exit_code == 127);
  CHECK(outcome.start_error.find("No such file or directory") != std::string::npos);
}

namespace {

// The child announces it is ready, then waits for `signal` and exits `code` when it arrives. The signal is
// sent to this process only after the announcement, when the forwarding handler is in place.
int exit_code_after_signal(int signal, const std::string& trap_name, int code) {
  TemporaryDirectory dir;
  fs::path ready = dir.path / "ready";
  LaunchPlan plan;
  plan.argv = {"/bin/sh", "-c",
               "trap 'exit " + std::to_string(code) + "' " + trap_name + "; touch \"$1\"; while :; do sleep 0.05; done",
               "sh", ready.string()};
  pid_t self = ::getpid();
  std::thread sender([self, ready, signal] {
    for (int wait = 0; wait < 2000 && !fs::exists(ready); ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(self, signal);
  });
  auto outcome = ptadvise::run_child(plan);
  sender.join();
  return outcome.exit_code;
}

}  // namespace

TEST_CASE("run: SIGTERM sent to ptadvise reaches the child") {
  CHECK(exit_code_after_signal(SIGTERM, "TERM", 42) == 42);
}

TEST_CASE("run: outputs are the files the run created or changed") {
  TemporaryDirectory dir;
  write_test_file(dir.path / "old.pt.trace.json", "[]");
  write_test_file(dir.path / "old.tmp", "");
  auto before = ptadvise::snapshot_directory(dir.path.string());
  CHECK(before.size() == 2);
  write_test_file(dir.path / "host_1.rank-0.pt.trace.json", "{}");
  write_test_file(dir.path / "host_2.pt.trace.json.gz", "");
  write_test_file(dir.path / "host_3.pt.trace.json.tmp", "{");
  write_test_file(dir.path / "host_4.pt.trace.json.status", "another CUPTI client is attached\nsecond line\n");
  write_test_file(dir.path / "notes.txt", "ignored");
  auto outputs = ptadvise::collect_outputs(dir.path.string(), before);
  REQUIRE(outputs.traces.size() == 2);
  CHECK(fs::path(outputs.traces[0]).filename() == "host_1.rank-0.pt.trace.json");
  CHECK(fs::path(outputs.traces[1]).filename() == "host_2.pt.trace.json.gz");
  REQUIRE(outputs.incomplete.size() == 1);
  CHECK(fs::path(outputs.incomplete[0]).filename() == "host_3.pt.trace.json.tmp");
  REQUIRE(outputs.notes.size() == 1);
  CHECK(outputs.notes[0] == "host_4.pt.trace.json.status: another CUPTI client is attached");
  CHECK(ptadvise::collect_outputs((dir.path / "missing").string(), {}).traces.empty());
}

TEST_CASE("run: the driver probe explains a machine without an NVIDIA driver") {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) {
    MESSAGE("skipped: this machine has an NVIDIA driver");
    return;
  }
  auto probe = ptadvise::probe_cuda_driver();
  CHECK_FALSE(probe.usable);
  CHECK(probe.device_count == 0);
  CHECK(probe.message.find("no NVIDIA driver: libcuda.so.1 cannot be loaded") == 0);
}

TEST_CASE("run: SIGUSR1 and SIGHUP sent to ptadvise reach the child too") {
  CHECK(exit_code_after_signal(SIGUSR1, "USR1", 43) == 43);
  CHECK(exit_code_after_signal(SIGHUP, "HUP", 44) == 44);
}

TEST_CASE("run: a signal ptadvise was started with ignored stays ignored in the child (nohup)") {
  struct sigaction ignore {}, saved {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGHUP, &ignore, &saved);
  LaunchPlan plan;
  plan.argv = {"/bin/sh", "-c", "kill -HUP $$; exit 5"};
  auto outcome = ptadvise::run_child(plan);
  struct sigaction after {};
  sigaction(SIGHUP, &saved, &after);
  CHECK(outcome.signal == 0);
  CHECK(outcome.exit_code == 5);
  CHECK((after.sa_handler == SIG_IGN));  // and ptadvise still ignores it afterwards
}

TEST_CASE("run: the child does not outlive a ptadvise that is killed") {
  TemporaryDirectory dir;
  fs::path pid_file = dir.path / "pid";
  pid_t runner = fork();
  REQUIRE(runner >= 0);
  if (runner == 0) {
    LaunchPlan plan;
    plan.argv = {"/bin/sh", "-c", "echo $$ > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"; while :; do sleep 0.05; done", "sh",
                 pid_file.string()};
    ptadvise::run_child(plan);
    _exit(0);
  }
  for (int wait = 0; wait < 2000 && !fs::exists(pid_file); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream in(pid_file);
  pid_t child = 0;
  in >> child;
  REQUIRE(child > 0);
  ::kill(runner, SIGKILL);  // ptadvise dies without a chance to clean up
  waitpid(runner, nullptr, 0);
  bool gone = false;
  for (int wait = 0; wait < 500 && !gone; ++wait) {
    // Gone, or a zombie waiting for its new parent to reap it.
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid_text, name, state;
    gone = !(stat >> pid_text >> name >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!gone) ::kill(child, SIGKILL);
  CHECK(gone);
}

namespace {

// Whether `pid` has a handler for `signal` (SigCgt of /proc/PID/status).
bool catches(pid_t pid, int signal) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (signal - 1)) & 1u;
  }
  return false;
}

}  // namespace

TEST_CASE("run: a signal sent while the child is being started still reaches it") {
  // The signal goes out the moment ptadvise's forwarder is in place, i.e. while fork and exec are under
  // way: it must reach the program (which exits 43 on it, or dies of it before its trap is set), never be
  // dropped (the program would run its 2 s and exit 0).
  for (int attempt = 0; attempt < 20; ++attempt) {
    pid_t runner = fork();
    REQUIRE(runner >= 0);
    if (runner == 0) {
      LaunchPlan plan;
      plan.argv = {"/bin/sh", "-c",
                   "trap 'exit 43' USR1; i=0; while [ $i -lt 100 ]; do sleep 0.02; i=$((i+1)); done; exit 0"};
      _exit(ptadvise::run_child(plan).exit_code);
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool ready = false;
    while (!(ready = catches(runner, SIGUSR1)) && std::chrono::steady_clock::now() < give_up) {
    }
    if (!ready) {  // a machine too loaded to get there in time: not this test's question
      ::kill(runner, SIGKILL);
      waitpid(runner, nullptr, 0);
      continue;
    }
    ::kill(runner, SIGUSR1);
    int status = 0;
    waitpid(runner, &status, 0);
    CAPTURE(attempt);
    REQUIRE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    CHECK((code == 43 || code == 128 + SIGUSR1));
  }
}
