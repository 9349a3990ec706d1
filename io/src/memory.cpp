#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ptadvise/io.h"

namespace ptadvise {
namespace {

// A value in kB from /proc/meminfo, or nullopt.
std::optional<uint64_t> meminfo_kib(const std::string& text, std::string_view key) {
  size_t at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  return std::strtoull(text.c_str() + at + key.size(), nullptr, 10);
}

std::optional<uint64_t> read_number_file(const char* path) {
  std::string text;
  if (read_small_file(path, text, 4096)) return std::nullopt;
  if (text.empty() || text.compare(0, 3, "max") == 0) return std::nullopt;
  return std::strtoull(text.c_str(), nullptr, 10);
}

// The cgroup v2 directory of this process (from /proc/self/cgroup "0::/path").
std::string cgroup_directory() {
  std::string text;
  if (read_small_file("/proc/self/cgroup", text, 65536)) return {};
  size_t at = text.find("0::");
  if (at == std::string::npos) return {};
  size_t end = text.find('\n', at);
  return "/sys/fs/cgroup" + text.substr(at + 3, end == std::string::npos ? std::string::npos : end - at - 3);
}

uint64_t mapped_bytes() {
  std::string text;
  if (read_small_file("/proc/self/statm", text, 4096)) return 0;
  return std::strtoull(text.c_str(), nullptr, 10) * 4096;
}

}  // namespace

size_t available_memory() {
  if (const char* limit = std::getenv("PTADVISE_MEMORY_LIMIT"); limit != nullptr && *limit != '\0') {
    if (auto bytes = parse_byte_size(limit)) return static_cast<size_t>(*bytes);
  }
  uint64_t available = UINT64_MAX;
  std::string meminfo;
  if (!read_small_file("/proc/meminfo", meminfo, 1 << 20)) {
    auto free = meminfo_kib(meminfo, "MemAvailable:");
    auto swap = meminfo_kib(meminfo, "SwapFree:");
    if (free) available = (*free + swap.value_or(0)) * 1024;
  }
  std::string cgroup = cgroup_directory();
  if (!cgroup.empty()) {
    auto max = read_number_file((cgroup + "/memory.max").c_str());
    auto current = read_number_file((cgroup + "/memory.current").c_str());
    if (max) available = std::min(available, *max > current.value_or(0) ? *max - current.value_or(0) : 0);
  }
  const uint64_t mapped = mapped_bytes();
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit {};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      available = std::min<uint64_t>(available, limit.rlim_cur > mapped ? limit.rlim_cur - mapped : 0);
    }
  }
  return available >= SIZE_MAX ? SIZE_MAX : static_cast<size_t>(available);
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, value < 10 ? "%.1f %s" : "%.0f %s", value, units[unit]);
  }
  return text;
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  size_t end = 0;
  while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || text[end] == '.')) ++end;
  if (end == 0) return std::nullopt;
  std::string number(text.substr(0, end));
  char* parsed = nullptr;
  double value = std::strtod(number.c_str(), &parsed);
  if (parsed != number.c_str() + number.size()) return std::nullopt;
  std::string_view unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  struct Unit {
    std::string_view name;
    double factor;
  };
  static constexpr Unit kUnits[] = {{"", 1},
                                    {"B", 1},
                                    {"KB", 1e3},
                                    {"MB", 1e6},
                                    {"GB", 1e9},
                                    {"TB", 1e12},
                                    {"KiB", 1024.0},
                                    {"MiB", 1048576.0},
                                    {"GiB", 1073741824.0},
                                    {"TiB", 1099511627776.0}};
  for (const Unit& candidate : kUnits) {
    if (unit == candidate.name) {
      double bytes = value * candidate.factor;
      if (!std::isfinite(bytes) || bytes >= 1.8e19) return std::nullopt;
      return static_cast<uint64_t>(bytes);
    }
  }
  return std::nullopt;
}

}  // namespace ptadvise
