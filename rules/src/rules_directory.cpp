#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "ptadvise/data_directory.h"
#include "ptadvise/io.h"
#include "ptadvise/rules.h"

namespace ptadvise {

std::string default_rules_directory() {
  if (const char* configured = std::getenv("PTADVISE_RULES_DIR"); configured != nullptr && *configured != '\0') {
    return configured;
  }
  std::string shipped = data_path("rules.d");
  // No data directory at all: name where it was expected, so the error says what is missing.
  return shipped.empty() ? "share/ptadvise/rules.d (beside the ptadvise executable)" : shipped;
}

std::variant<std::vector<RuleFile>, RuleError> read_rule_files(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return RuleError{directory + ": not a rule directory"};
  std::vector<fs::path> paths;
  std::set<std::pair<dev_t, ino_t>> seen_directories;
  auto first_visit = [&seen_directories](const fs::path& path) {
    struct stat info {};
    return stat(path.c_str(), &info) != 0 || seen_directories.emplace(info.st_dev, info.st_ino).second;
  };
  first_visit(directory);
  for (fs::recursive_directory_iterator it(directory, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code type_error;
    if (it->is_directory(type_error)) {
      if (!first_visit(it->path())) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(type_error) && (it->path().extension() == ".yaml" || it->path().extension() == ".yml")) {
      paths.push_back(it->path());
    }
  }
  if (ec) return RuleError{directory + ": cannot list rule files: " + ec.message()};
  std::sort(paths.begin(), paths.end());
  std::vector<RuleFile> files;
  for (const auto& path : paths) {
    RuleFile file{path.string(), {}};
    if (auto error = read_small_file(file.path, file.text)) {
      return RuleError{file.path + ": cannot read the rule file: " + *error};
    }
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace ptadvise
