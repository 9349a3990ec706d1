// A progress line on stderr for work that takes more than about a second (a multi-GB trace, a job of many
// ranks): the traces done, the bytes read of the total, the rate and the time left. Only when stderr is a
// terminal and not in CI; never in logs or pipes. The line is erased when the work ends, so the report
// that follows starts clean.
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

  // Starts a stage: `what` ("checking"), `unit` ("traces"), how many units and how many bytes in total (0
  // when unknown).
  void start(std::string what, std::string unit, size_t total, uint64_t total_bytes);
  // `done` units finished and `bytes` read so far. Safe to call from several threads.
  void update(size_t done, uint64_t bytes);
  // The same, when the totals become known only as the work goes on.
  void update(size_t done, uint64_t bytes, size_t total, uint64_t total_bytes);
  void finish();

 private:
  void run();
  std::string line(std::chrono::steady_clock::time_point now);

  bool enabled_;
  std::chrono::milliseconds quiet_for_;  // nothing is shown for work shorter than this
  std::chrono::milliseconds refresh_;    // the line is redrawn this often
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  bool stop_ = false;
  bool active_ = false;
  bool shown_ = false;
  std::string what_, unit_;
  size_t total_ = 0, done_ = 0;
  uint64_t bytes_ = 0, total_bytes_ = 0;
  std::chrono::steady_clock::time_point started_, drawn_;
};

// stderr is a terminal, TERM is not dumb and no CI variable is set.
bool progress_wanted();

}  // namespace ptadvise
