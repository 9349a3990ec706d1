// Finding what a run left in its output directory.
#include <algorithm>
#include <fstream>
#include <system_error>

#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/capture.h"

namespace ptadvise {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

DirectorySnapshot snapshot_directory(const std::string& dir) {
  DirectorySnapshot snapshot;
  std::error_code error;
  // increment(error_code&) is noexcept and allocates: a failed allocation there would end the process.
  without_bad_alloc_inside([&] {
    for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
      std::error_code entry_error;
      if (!it->is_regular_file(entry_error)) continue;
      auto written = it->last_write_time(entry_error);
      if (!entry_error) snapshot.emplace_back(it->path().string(), written);
    }
  });
  std::sort(snapshot.begin(), snapshot.end());
  return snapshot;
}

// Modification times are coarse (a few ms): comparing with a clock reading would miss files written
// right after the start, so a run's files are those that are new or changed against the snapshot.
CaptureOutputs collect_outputs(const std::string& out_dir, const DirectorySnapshot& before) {
  CaptureOutputs outputs;
  for (const auto& [path, written] : snapshot_directory(out_dir)) {
    auto old = std::lower_bound(before.begin(), before.end(), std::make_pair(path, fs::file_time_type::min()));
    if (old != before.end() && old->first == path && old->second == written) continue;
    if (ends_with(path, ".json") || ends_with(path, ".json.gz")) {
      outputs.traces.push_back(path);
    } else if (ends_with(path, ".tmp")) {
      outputs.incomplete.push_back(path);
    } else if (ends_with(path, ".status")) {
      std::ifstream status(path);
      std::string line;
      if (std::getline(status, line) && !line.empty()) {
        outputs.notes.push_back(fs::path(path).filename().string() + ": " + line);
      }
    }
  }
  std::sort(outputs.traces.begin(), outputs.traces.end());
  std::sort(outputs.incomplete.begin(), outputs.incomplete.end());
  std::sort(outputs.notes.begin(), outputs.notes.end());
  return outputs;
}

}  // namespace ptadvise
