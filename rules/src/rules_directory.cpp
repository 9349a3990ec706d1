#include <cstdlib>
#include <filesystem>

#include "ptadvise/rules.h"

namespace ptadvise {

std::string default_rules_directory() {
  if (const char* configured = std::getenv("PTADVISE_RULES_DIR"); configured != nullptr && *configured != '\0') {
    return configured;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path() / ".." / "share" / "ptadvise" / "rules.d";
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
  return PTADVISE_SOURCE_RULES_DIR;
}

}  // namespace ptadvise
