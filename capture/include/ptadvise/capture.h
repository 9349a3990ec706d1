// `ptadvise run`: launching a program with capture enabled and finding the traces it wrote.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ptadvise {

enum class CaptureBackend { Cupti, Torch };

// Whether a CUDA driver with at least one device can be used here (dlopen libcuda.so.1, cuInit,
// cuDeviceGetCount). `message` says what is missing, phrased for the user.
struct DriverProbe {
  bool usable = false;
  int device_count = 0;
  std::string message;
};
DriverProbe probe_cuda_driver();

// Where the capture's pieces are. Empty fields are looked up: the environment (PTADVISE_CUPTI_LIBRARY,
// PTADVISE_PYTHON_DIR), then beside the executable (../lib/ptadvise, ../share/ptadvise/python; in a build
// tree ../capture and the data directory's python link).
struct CaptureInstall {
  std::string cupti_library;  // libptadvise_cupti.so, loaded through CUDA_INJECTION64_PATH
  std::string cupti_runtime;  // NVIDIA's libcupti.so, named by NVTX_INJECTION64_PATH for NVTX ranges
  std::string python_dir;     // sitecustomize.py (the shim) and ptadvise_torch_run.py
};
CaptureInstall locate_capture_install(const std::string& executable_path);

struct CaptureRequest {
  CaptureBackend backend = CaptureBackend::Cupti;
  std::string out_dir;
  int skip_steps = 0;
  int steps = 0;  // 0: every step after the skipped ones (cupti); torch records 5 by default
  std::vector<std::string> command;
};

// What to execute: the final argv and the variables to add to (or replace in) the environment.
struct LaunchPlan {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> environment;
  // The program's standard output goes to standard error: ptadvise's own stdout then holds the report alone
  // (a JSON, SARIF, JUnit or Markdown document a training log would corrupt).
  bool stdout_to_stderr = false;
};
struct CaptureError {
  int exit_code = 2;
  std::string message;
};

// True for `python`, `python3`, `python3.11`, `/usr/bin/python3`, ... (the shim and runner apply).
bool is_python_command(const std::vector<std::string>& command);

// Builds the launch: CUDA_INJECTION64_PATH/NVTX_INJECTION64_PATH and PTADVISE_CAPTURE_* for cupti; the
// torch runner inserted after the interpreter for torch; the shim prepended to PYTHONPATH (`getenv`
// gives the current value) for Python commands. Errors: torch capture of a non-Python command (2),
// capture library missing (3).
std::variant<LaunchPlan, CaptureError> plan_launch(const CaptureRequest& request, const CaptureInstall& install,
                                                   const std::function<const char*(const char*)>& getenv);

// How the child ended. exit_code is its status, or 128+signal when a signal killed it, or 127 when it
// could not be started (start_error says why).
struct ChildOutcome {
  int exit_code = 0;
  int signal = 0;
  std::string start_error;
};
// fork/exec with the plan's environment; SIGINT/SIGTERM/SIGHUP sent to ptadvise (not those the terminal
// already delivered to the whole process group) are forwarded to the child. Waits for it to end.
ChildOutcome run_child(const LaunchPlan& plan);

// The files of a directory and their modification times, taken before the run.
using DirectorySnapshot = std::vector<std::pair<std::string, std::filesystem::file_time_type>>;
DirectorySnapshot snapshot_directory(const std::string& dir);

// What the run left in the output directory: files absent from `before` or modified since.
struct CaptureOutputs {
  std::vector<std::string> traces;      // *.json / *.json.gz, sorted
  std::vector<std::string> incomplete;  // *.tmp: a process died before writing its trace
  std::vector<std::string> notes;       // one line per *.status file (e.g. another CUPTI client)
};
CaptureOutputs collect_outputs(const std::string& out_dir, const DirectorySnapshot& before);

}  // namespace ptadvise
