#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ptadvise/advisor.h"
#include "ptadvise/io.h"

namespace ptadvise {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// Lines of a source file, read once per run; empty when unreadable.
const std::vector<std::string>& file_lines(std::map<std::string, std::vector<std::string>>& cache,
                                           const std::string& path) {
  auto [it, inserted] = cache.try_emplace(path);
  if (inserted) {
    std::string text;
    if (!read_small_file(path, text)) {
      std::istringstream in(text);
      std::string line;
      while (std::getline(in, line)) it->second.push_back(line);
    }
  }
  return it->second;
}

}  // namespace

std::string locate_source(const std::string& file, const std::string& source_root) {
  namespace fs = std::filesystem;
  if (file.empty()) return {};
  std::error_code ec;
  fs::path path(file);
  fs::path root = source_root.empty() ? fs::path(".") : fs::path(source_root);
  fs::path direct = path.is_relative() ? root / path : path;
  if (fs::is_regular_file(direct, ec)) return direct.lexically_normal().string();
  // Drop leading components one by one: /workspace/proj/train.py -> proj/train.py -> train.py.
  std::vector<fs::path> parts(path.begin(), path.end());
  for (size_t first = 1; first < parts.size(); ++first) {
    fs::path tail;
    for (size_t i = first; i < parts.size(); ++i) tail /= parts[i];
    if (tail.empty() || tail.is_absolute()) continue;
    fs::path candidate = root / tail;
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
  }
  return {};
}

bool line_suppresses(std::string_view line, std::string_view rule_id, std::string_view rule_name) {
  size_t hash = line.find('#');
  while (hash != std::string_view::npos) {
    std::string_view rest = trim(line.substr(hash + 1));
    constexpr std::string_view kMarker = "ptadvise:";
    if (rest.substr(0, kMarker.size()) == kMarker) {
      rest = trim(rest.substr(kMarker.size()));
      constexpr std::string_view kIgnore = "ignore";
      if (rest.substr(0, kIgnore.size()) == kIgnore) {
        rest = rest.substr(kIgnore.size());
        if (rest.empty() || rest.front() == ' ' || rest.front() == '\t' || rest.front() == '#') return true;
        if (rest.front() == '[') {
          size_t close = rest.find(']');
          std::string_view list = rest.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
          while (!list.empty()) {
            size_t comma = list.find(',');
            std::string_view item = trim(list.substr(0, comma));
            if (!item.empty() && (item == rule_id || item == rule_name)) return true;
            if (comma == std::string_view::npos) break;
            list.remove_prefix(comma + 1);
          }
        }
      }
    }
    hash = line.find('#', hash + 1);
  }
  return false;
}

size_t apply_suppressions(std::vector<Finding>& findings, const std::string& source_root) {
  std::map<std::string, std::vector<std::string>> cache;
  size_t removed = 0;
  std::vector<Finding> kept;
  kept.reserve(findings.size());
  for (auto& finding : findings) {
    bool suppressed = false;
    if (finding.site.source && finding.site.source->line > 0 && !finding.site.source->file.empty()) {
      std::string path = locate_source(finding.site.source->file, source_root);
      static const std::vector<std::string> kNoLines;
      const auto& lines = path.empty() ? kNoLines : file_lines(cache, path);
      auto line = static_cast<size_t>(finding.site.source->line);
      if (line <= lines.size()) suppressed = line_suppresses(lines[line - 1], finding.rule_id, finding.rule_name);
    }
    if (suppressed) {
      ++removed;
    } else {
      kept.push_back(std::move(finding));
    }
  }
  findings = std::move(kept);
  return removed;
}

}  // namespace ptadvise
