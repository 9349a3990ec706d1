// Planning the launch of the captured program: argv and environment for each backend.
#include <filesystem>
#include <string_view>
#include <system_error>

#include "ptadvise/capture.h"
#include "ptadvise/data_directory.h"

namespace ptadvise {

namespace fs = std::filesystem;

namespace {

bool exists(const std::string& path) {
  std::error_code error;
  return !path.empty() && fs::is_regular_file(path, error);
}

bool is_directory(const std::string& path) {
  std::error_code error;
  return !path.empty() && fs::is_directory(path, error);
}

std::string first_existing(std::initializer_list<std::string> candidates, bool directory) {
  for (const std::string& candidate : candidates) {
    if (directory ? is_directory(candidate) : exists(candidate)) return candidate;
  }
  return {};
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace

CaptureInstall locate_capture_install(const std::string& executable_path) {
  std::error_code error;
  fs::path exe = fs::weakly_canonical(executable_path, error);
  fs::path bin_dir = exe.parent_path();
  CaptureInstall install;
#ifdef PTADVISE_CUPTI_RUNTIME_LIBRARY
  const std::string cupti_runtime = PTADVISE_CUPTI_RUNTIME_LIBRARY;
#else
  const std::string cupti_runtime = "/usr/local/cuda/lib64/libcupti.so";
#endif
  install.cupti_library = first_existing({env_or_empty("PTADVISE_CUPTI_LIBRARY"),
                                          (bin_dir / "../lib/ptadvise/libptadvise_cupti.so").string(),
                                          (bin_dir / "../capture/libptadvise_cupti.so").string()},
                                         false);
  install.cupti_runtime = first_existing({env_or_empty("PTADVISE_CUPTI_RUNTIME"), cupti_runtime,
                                          "/usr/local/cuda/lib64/libcupti.so",
                                          "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"},
                                         false);
  install.python_dir = first_existing({env_or_empty("PTADVISE_PYTHON_DIR"),
                                       (bin_dir / "../share/ptadvise/python").string(), data_path("python")},
                                      true);
  for (std::string* path : {&install.cupti_library, &install.cupti_runtime, &install.python_dir}) {
    if (!path->empty()) *path = fs::weakly_canonical(*path, error).string();
  }
  return install;
}

bool is_python_command(const std::vector<std::string>& command) {
  if (command.empty()) return false;
  std::string name = fs::path(command[0]).filename().string();
  if (name.rfind("python", 0) != 0) return false;
  // python, python3, python3.11, python3-dbg; not python-config or pythonw scripts of other tools.
  std::string_view rest = std::string_view(name).substr(6);
  for (char c : rest) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == 'd' || c == 'b' || c == 'g' || c == 'm')) {
      return false;
    }
  }
  return true;
}

std::variant<LaunchPlan, CaptureError> plan_launch(const CaptureRequest& request, const CaptureInstall& install,
                                                   const std::function<const char*(const char*)>& getenv) {
  if (request.command.empty()) return CaptureError{2, "no command to run: write it after `--`"};
  LaunchPlan plan;
  std::error_code error;
  std::string out_dir = fs::absolute(request.out_dir, error).lexically_normal().string();
  bool python = is_python_command(request.command);
  auto& env = plan.environment;
  env.emplace_back("PTADVISE_CAPTURE_DIR", out_dir);
  env.emplace_back("PTADVISE_CAPTURE_BACKEND", request.backend == CaptureBackend::Cupti ? "cupti" : "torch");
  env.emplace_back("PTADVISE_SKIP_STEPS", std::to_string(request.skip_steps));
  env.emplace_back("PTADVISE_STEPS", std::to_string(request.steps));
  if (python) {
    if (install.python_dir.empty()) {
      return CaptureError{3, "the Python shim of ptadvise is not installed (set PTADVISE_PYTHON_DIR)"};
    }
    const char* old_path = getenv("PYTHONPATH");
    std::string path = install.python_dir;
    if (old_path != nullptr && *old_path != '\0') path += std::string(":") + old_path;
    env.emplace_back("PYTHONPATH", path);
  }

  if (request.backend == CaptureBackend::Cupti) {
    if (install.cupti_library.empty()) {
      return CaptureError{3, "the CUPTI capture library (libptadvise_cupti.so) is not part of this build; use "
                             "`--capture torch` for Python scripts or record a trace with torch.profiler and "
                             "run `ptadvise check` on it"};
    }
    env.emplace_back("CUDA_INJECTION64_PATH", install.cupti_library);
    // NVTX ranges reach CUPTI only when NVTX loads libcupti as its injection.
    if (!install.cupti_runtime.empty()) env.emplace_back("NVTX_INJECTION64_PATH", install.cupti_runtime);
    if (request.skip_steps > 0 && python) env.emplace_back("PTADVISE_CAPTURE_DEFER", "1");
    plan.argv = request.command;
    return plan;
  }

  if (!python) {
    return CaptureError{2, "--capture torch runs Python scripts under torch.profiler: the command must start "
                           "with a Python interpreter (e.g. `-- python3 train.py`)"};
  }
  // python [interpreter options] RUNNER (SCRIPT | -m MODULE | -c CODE) ARGS...
  plan.argv.push_back(request.command[0]);
  size_t i = 1;
  while (i < request.command.size()) {
    const std::string& arg = request.command[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "-m" || arg == "-c" || arg == "-" || arg == "--") break;
    plan.argv.push_back(arg);
    ++i;
    // Options that take their value as the next argument.
    if ((arg == "-W" || arg == "-X" || arg == "--check-hash-based-pycs") && i < request.command.size()) {
      plan.argv.push_back(request.command[i++]);
    }
  }
  if (i >= request.command.size()) {
    return CaptureError{2, "--capture torch needs a script to run: `-- python3 train.py` or `-- python3 -m pkg`"};
  }
  plan.argv.push_back((fs::path(install.python_dir) / "ptadvise_torch_run.py").string());
  for (; i < request.command.size(); ++i) plan.argv.push_back(request.command[i]);
  return plan;
}

}  // namespace ptadvise
