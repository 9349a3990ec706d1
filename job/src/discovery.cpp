// Which of the traces found are the ranks of one job.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "ptadvise/job.h"
#include "ptadvise/loader.h"

namespace ptadvise {
namespace {
namespace fs = std::filesystem;
}  // namespace

std::vector<JobGroup> group_jobs(const std::vector<RankDigest>& digests) {
  using Key = std::tuple<std::string, int, std::string>;  // directory, world size, backend
  std::map<Key, std::vector<size_t>> candidates;
  std::vector<JobGroup> groups;
  for (size_t i = 0; i < digests.size(); ++i) {
    const RankDigest& d = digests[i];
    if (!d.rank) {
      groups.push_back({{i}, fs::path(d.path).parent_path().string(), ""});
      continue;
    }
    candidates[{fs::path(d.path).parent_path().string(), d.world_size, d.backend}].push_back(i);
  }
  for (auto& [key, members] : candidates) {
    const std::string& directory = std::get<0>(key);
    std::set<int> seen;
    bool distinct = true;
    for (size_t i : members) distinct = seen.insert(*digests[i].rank).second && distinct;
    const int world = std::get<1>(key);
    const bool fits = world <= 1 || static_cast<size_t>(world) >= members.size();
    if (members.size() >= 2 && distinct && fits) {
      std::sort(members.begin(), members.end(), [&](size_t a, size_t b) { return *digests[a].rank < *digests[b].rank; });
      groups.push_back({members, directory, ""});
      continue;
    }
    for (size_t i : members) {
      std::string note;
      if (members.size() >= 2) {
        note = distinct ? "more traces than the world size of " + std::to_string(world) + " in " + directory
                        : "rank " + std::to_string(*digests[i].rank) + " occurs more than once in " + directory;
        note += ": not taken as the ranks of one job; checked on its own";
      }
      groups.push_back({{i}, directory, note});
    }
  }
  std::sort(groups.begin(), groups.end(), [](const JobGroup& a, const JobGroup& b) { return a.members < b.members; });
  return groups;
}

}  // namespace ptadvise
