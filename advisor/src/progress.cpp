#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string_view>
#include <system_error>

#include "format.h"
#include "ptadvise/advisor.h"

namespace ptadvise {

namespace {

constexpr auto kQuietFor = std::chrono::milliseconds(1000);  // short work shows nothing
constexpr auto kRefresh = std::chrono::milliseconds(250);
constexpr auto kMinRefresh = std::chrono::milliseconds(5);

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 4) {
    bytes /= 1000;
    ++unit;
  }
  return format::fixed(bytes, unit == 0 ? 0 : 1) + " " + units[unit];
}

// PTADVISE_PROGRESS_AFTER_MS replaces the second of quiet, and the refresh interval when it is shorter
// (down to 5 ms), so that tests see the line, and its changes, on inputs of a few MB (docs/CI.md).
std::chrono::milliseconds quiet_period() {
  const char* env = std::getenv("PTADVISE_PROGRESS_AFTER_MS");
  if (!env || !*env) return kQuietFor;
  char* end = nullptr;
  const long value = std::strtol(env, &end, 10);
  if (*end != '\0' || value < 0) return kQuietFor;
  return std::chrono::milliseconds(value);
}

}  // namespace

bool progress_wanted() {
  if (isatty(STDERR_FILENO) != 1) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;
  const char* ci = std::getenv("CI");
  return !(ci && *ci);
}

Progress::Progress(bool enabled)
    : enabled_(enabled),
      quiet_for_(quiet_period()),
      refresh_(std::clamp<std::chrono::milliseconds>(quiet_for_, kMinRefresh, kRefresh)) {
  if (!enabled_) return;
  try {
    ticker_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    enabled_ = false;  // no thread to be had: no progress line
  }
}

Progress::~Progress() {
  if (!enabled_) return;
  finish();
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  ticker_.join();
}

void Progress::start(std::string what, std::string unit, size_t total, uint64_t total_bytes) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  what_ = std::move(what);
  unit_ = std::move(unit);
  total_ = total;
  total_bytes_ = total_bytes;
  done_ = 0;
  bytes_ = 0;
  started_ = std::chrono::steady_clock::now();
  active_ = true;
}

void Progress::update(size_t done, uint64_t bytes) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  done_ = done;
  bytes_ = bytes;
}

void Progress::update(size_t done, uint64_t bytes, size_t total, uint64_t total_bytes) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  done_ = done;
  bytes_ = bytes;
  total_ = total;
  total_bytes_ = total_bytes;
}

void Progress::finish() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  active_ = false;
  if (shown_) {
    std::fputs("\r\x1b[K", stderr);  // erase the line
    std::fflush(stderr);
    shown_ = false;
  }
}

// "ptadvise: checking 3/8 traces, 1.2 GB of 3.4 GB (210.5 MB/s), ETA 11 s"
std::string Progress::line(std::chrono::steady_clock::time_point now) {
  const double seconds = std::max(std::chrono::duration<double>(now - started_).count(), 1e-3);
  std::string text = "ptadvise: " + what_;
  if (total_ > 1) text += " " + std::to_string(done_) + "/" + std::to_string(total_) + " " + unit_;
  if (total_bytes_ > 0) {
    text += (total_ > 1 ? ", " : " ") + bytes_text(static_cast<double>(bytes_)) + " of " +
            bytes_text(static_cast<double>(total_bytes_)) + " (" + bytes_text(static_cast<double>(bytes_) / seconds) + "/s)";
  }
  if (total_bytes_ > 0 && bytes_ > 0 && bytes_ < total_bytes_) {
    const double left = seconds / static_cast<double>(bytes_) * static_cast<double>(total_bytes_ - bytes_);
    text += ", ETA " + format::fixed(left, 0) + " s";
  } else if (total_ > 0 && done_ > 0 && done_ < total_) {
    const double left = seconds / static_cast<double>(done_) * static_cast<double>(total_ - done_);
    text += ", ETA " + format::fixed(left, 0) + " s";
  } else {
    if (total_bytes_ > 0 && bytes_ >= total_bytes_ && done_ < total_) text += ", analysing";
    text += ", " + format::fixed(seconds, 0) + " s";
  }
  return text;
}

void Progress::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, refresh_ / 5);
    if (stop_ || !active_) continue;
    auto now = std::chrono::steady_clock::now();
    if (now - started_ < quiet_for_ || (shown_ && now - drawn_ < refresh_)) continue;
    try {
      std::fprintf(stderr, "\r\x1b[K%s", line(now).c_str());
    } catch (const std::bad_alloc&) {
      continue;  // out of memory: the work itself reports it; the line is only skipped
    }
    std::fflush(stderr);
    shown_ = true;
    drawn_ = now;
  }
}

std::shared_ptr<const ArgKeySet> args_to_keep(const RuleSet* rules) {
  return std::make_shared<const ArgKeySet>(kept_arg_keys(rules != nullptr ? rules->arg_keys() : ArgKeySet{}));
}

std::variant<std::vector<Timeline>, LoadError> load_traces_with_progress(const std::vector<std::string>& paths,
                                                                         std::shared_ptr<const ArgKeySet> arg_keys) {
  Progress progress(progress_wanted());
  progress.start("loading", "traces", 0, 0);
  // Bytes count the uncompressed JSON: those of the traces loaded, plus the part parsed of the current one.
  size_t loaded = 0, expected = 0;
  uint64_t bytes_before = 0;
  LoadOptions options;
  options.arg_keys = std::move(arg_keys);
  options.on_bytes_parsed = [&](uint64_t parsed, uint64_t size) {
    progress.update(loaded, bytes_before + parsed, expected, bytes_before + size);
  };
  options.on_file_loaded = [&](size_t done, size_t files, uint64_t bytes) {
    expected = files;
    loaded = done;
    bytes_before += bytes;
    progress.update(loaded, bytes_before, expected, bytes_before);
  };
  std::vector<std::string> skipped;
  options.on_not_a_trace = [&](const std::string& message) { skipped.push_back(message); };
  auto result = load_traces(paths, options);
  progress.finish();
  for (const std::string& message : skipped) std::cerr << "ptadvise: warning: " << format::visible(message) << "; skipped\n";
  return result;
}

}  // namespace ptadvise
