#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <string_view>

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

namespace {

// Collects the .yaml/.yml files under `directory`, following symlinks, each directory once. POSIX calls,
// not std::filesystem's iterators: libstdc++'s directory iteration aborts when an allocation fails inside it
// (an exception through a noexcept frame), where this lets std::bad_alloc reach the one-line error.
bool collect_rule_paths(const std::string& directory, std::set<std::pair<dev_t, ino_t>>& seen,
                        std::vector<std::string>& paths, std::string& error) {
  errno = 0;
  DIR* listing = opendir(directory.c_str());
  if (listing == nullptr) {
    if (errno == ENOMEM) throw std::bad_alloc();  // its buffer could not be allocated: out of memory
    error = directory + ": cannot list rule files: " + std::strerror(errno);
    return false;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(listing, closedir);
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
    errno = 0;
  }
  if (errno == ENOMEM) throw std::bad_alloc();
  if (errno != 0) {
    error = directory + ": cannot list rule files: " + std::strerror(errno);
    return false;
  }
  for (const std::string& name : names) {
    const std::string path = directory + (directory.ends_with('/') ? "" : "/") + name;
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) continue;  // a dangling symlink: nothing to read
    if (S_ISDIR(info.st_mode)) {
      if (seen.emplace(info.st_dev, info.st_ino).second && !collect_rule_paths(path, seen, paths, error)) return false;
    } else if (S_ISREG(info.st_mode) && (name.ends_with(".yaml") || name.ends_with(".yml"))) {
      paths.push_back(path);
    }
  }
  return true;
}

}  // namespace

std::variant<std::vector<RuleFile>, RuleError> read_rule_files(const std::string& directory) {
  struct stat top {};
  if (stat(directory.c_str(), &top) != 0 || !S_ISDIR(top.st_mode)) return RuleError{directory + ": not a rule directory"};
  std::set<std::pair<dev_t, ino_t>> seen{{top.st_dev, top.st_ino}};
  std::vector<std::string> paths;
  std::string listing_error;
  if (!collect_rule_paths(directory, seen, paths, listing_error)) return RuleError{listing_error};
  // In path order: component by component, as if '/' sorted before every other byte.
  std::sort(paths.begin(), paths.end(), [](const std::string& a, const std::string& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return (x == '/' ? 0 : static_cast<unsigned char>(x)) < (y == '/' ? 0 : static_cast<unsigned char>(y));
    });
  });
  std::vector<RuleFile> files;
  for (const auto& path : paths) {
    RuleFile file{path, {}};
    if (auto error = read_small_file(file.path, file.text)) {
      return RuleError{file.path + ": cannot read the rule file: " + *error};
    }
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace ptadvise
