// A progress line on stderr for work that takes more than about a second (a multi-GB trace, a job of many
// ranks): what is done, the rate and the time left. Only when stderr is a terminal and not in CI; never
// in logs or pipes. The line is erased when the work ends, so the report that follows starts clean.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace ptadvise {

class Progress {
 public:
  // `enabled` false makes every call a no-op (see progress_wanted()).
  explicit Progress(bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Starts a stage: `what` ("loading", "analysing"), `unit` ("files", "ranks"), how many in total (0 when
  // unknown).
  void start(std::string what, std::string unit, size_t total);
  // `done` of `total` units finished so far, and bytes processed so far (0 when not counted).
  void update(size_t done, size_t total, uint64_t bytes);
  void finish();

 private:
  void run();
  std::string line(std::chrono::steady_clock::time_point now);

  bool enabled_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  bool stop_ = false;
  bool active_ = false;
  bool shown_ = false;
  std::string what_, unit_;
  size_t total_ = 0, done_ = 0;
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point started_;
};

// stderr is a terminal, TERM is not dumb and no CI variable is set.
bool progress_wanted();

}  // namespace ptadvise
