#include "ptadvise/data_directory.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace ptadvise {

namespace fs = std::filesystem;

std::string data_directory() {
  if (const char* configured = std::getenv("PTADVISE_DATA_DIR"); configured != nullptr && *configured != '\0') {
    return configured;
  }
  std::error_code ec;
  // The executable itself, not argv[0]: symlinks on PATH (/usr/local/bin/ptadvise -> /opt/...) resolve.
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  fs::path dir = exe.parent_path();
  fs::path beside = dir.parent_path() / "share" / "ptadvise";
  if (fs::is_directory(beside, ec)) return beside.lexically_normal().string();
  // Build trees put test and fuzz executables deeper than bin/; their root has CMakeCache.txt.
  for (fs::path up = dir; up.has_relative_path(); up = up.parent_path()) {
    if (fs::is_regular_file(up / "CMakeCache.txt", ec)) {
      fs::path built = up / "share" / "ptadvise";
      return fs::is_directory(built, ec) ? built.string() : std::string();
    }
  }
  return {};
}

std::string data_path(std::string_view relative) {
  std::string dir = data_directory();
  return dir.empty() ? dir : (fs::path(dir) / relative).string();
}

}  // namespace ptadvise
