#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "format.h"

namespace ptadvise {

namespace {

constexpr auto kQuietFor = std::chrono::milliseconds(1000);  // short work shows nothing
constexpr auto kRefresh = std::chrono::milliseconds(250);

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 4) {
    bytes /= 1000;
    ++unit;
  }
  return format::fixed(bytes, unit == 0 ? 0 : 1) + " " + units[unit];
}

}  // namespace

bool progress_wanted() {
  if (isatty(STDERR_FILENO) != 1) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;
  const char* ci = std::getenv("CI");
  return !(ci && *ci);
}

Progress::Progress(bool enabled) : enabled_(enabled) {
  if (enabled_) ticker_ = std::thread([this] { run(); });
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

void Progress::start(std::string what, std::string unit, size_t total) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  what_ = std::move(what);
  unit_ = std::move(unit);
  total_ = total;
  done_ = 0;
  bytes_ = 0;
  started_ = std::chrono::steady_clock::now();
  active_ = true;
}

void Progress::update(size_t done, size_t total, uint64_t bytes) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  done_ = done;
  total_ = total;
  bytes_ = bytes;
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

std::string Progress::line(std::chrono::steady_clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - started_).count();
  std::string text = "ptadvise: " + what_;
  if (total_ > 0) text += " " + std::to_string(done_) + "/" + std::to_string(total_) + " " + unit_;
  if (bytes_ > 0) text += ", " + bytes_text(static_cast<double>(bytes_)) + " (" + bytes_text(static_cast<double>(bytes_) / seconds) + "/s)";
  if (total_ > 0 && done_ > 0 && done_ < total_) {
    const double left = seconds / static_cast<double>(done_) * static_cast<double>(total_ - done_);
    text += ", ETA " + format::fixed(left, 0) + " s";
  } else {
    text += ", " + format::fixed(seconds, 0) + " s";
  }
  return text;
}

void Progress::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kRefresh);
    if (stop_ || !active_) continue;
    auto now = std::chrono::steady_clock::now();
    if (now - started_ < kQuietFor) continue;
    std::fprintf(stderr, "\r\x1b[K%s", line(now).c_str());
    std::fflush(stderr);
    shown_ = true;
  }
}

}  // namespace ptadvise
