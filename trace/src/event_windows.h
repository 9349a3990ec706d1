// Internal to trace/: reading the event list in windows, on every core. A window starts at an event and
// ends before the event that starts a line after about kWindowBytes; it is copied with '[' and ']' around it
// and read as one array document (simdjson's index of a few MiB stays in cache). Windows are read ahead on
// worker threads from where the last one ended, each into its own EventChunk, and taken in file order; a
// window that is not where the list goes on (after a broken event) is dropped and read again from there.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "event_chunk.h"
#include "json_scan.h"

namespace ptadvise::detail {

#ifdef PTADVISE_LOADER_SMALL_WINDOWS
inline constexpr size_t kWindowBytes = 2048;  // fuzzing builds: window boundaries fall inside small inputs
#else
inline constexpr size_t kWindowBytes = size_t{4} << 20;
#endif

// Where the window starting at `start` ends: before an event that begins a line (after "},"), else after
// the last line break, else after a "},", within the last half of kWindowBytes.
size_t window_limit(const char* data, size_t size, size_t start);

// What reading one window found; positions are in the file.
struct WindowResult {
  size_t start = 0, limit = 0;
  bool stage1_failed = false;  // not even indexed: read it event by event
  bool closed = false;         // the array ended inside the window (the end of the event list)
  size_t last_object = kNotFound;      // start of the last event object read
  size_t last_object_end = kNotFound;  // and its end, when it lies inside the window
  size_t resume = 0;                   // after the last non-object element read
  size_t failed_at = kNotFound;        // where reading stopped
  bool failed_at_event = false;        // failed_at is the start of an event
  EventChunk chunk;
};

class WindowPool {
 public:
  // `workers` threads besides the caller's; 0 reads every window on the caller's thread.
  WindowPool(const char* data, size_t size, unsigned workers);
  ~WindowPool();
  WindowPool(const WindowPool&) = delete;
  WindowPool& operator=(const WindowPool&) = delete;

  // The window [start, limit): the one read ahead when it starts there, else read now on this thread
  // (the windows read ahead are dropped then).
  WindowResult take(size_t start, size_t limit);
  // Queues windows from `next` (the start of an event) on to be read ahead, unless they are.
  void read_ahead(size_t next);

 private:
  struct Reader;
  struct Task;
  void work(Reader& reader);
  void run(Reader& reader, Task& task);

  const char* data_;
  size_t size_;
  std::unique_ptr<Reader> own_;  // the caller's
  std::vector<std::unique_ptr<Reader>> readers_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Task>> ahead_;
  size_t ahead_end_ = kNotFound;
  bool stop_ = false;
  std::exception_ptr failure_;
};

}  // namespace ptadvise::detail
