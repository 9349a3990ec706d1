// Internal to trace/: reading the event list in windows, on every core. A window starts at an event and
// ends before the event that starts a line after about kWindowBytes; it is read as one array document
// (simdjson's index of a few MiB stays in cache). The caller's thread reads its windows in place: the white
// space byte before the window is patched to '[' and the first white space byte ending it to ']', and both
// are restored afterwards. Worker threads never write the buffer: they read windows ahead, from where the
// last one ended, from a copy with '[' and ']' around it, each into its own EventChunk; windows are taken
// in file order, and one that is not where the list goes on (after a broken event) is dropped and read
// again from there. While a worker still reads the window the caller takes next, the caller reads windows
// queued after it (from copies), so that every core parses rather than one waiting for the other. A window
// without those white space bytes (minified "},{") is copied on any thread.
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
inline constexpr size_t kWindowBytes = size_t{2} << 20;
#endif

// Where the window starting at `start` ends: before an event that begins a line (after "},"), else after
// the last line break, else after a "},", within the last half of kWindowBytes.
size_t window_limit(const char* data, size_t size, size_t start);

// The bytes to patch to '[' (`open`, before `start`) and ']' (`close`, the first of the white space that
// ends the window, else the spare byte after the file when the window ends it) to read [start, limit) in
// place; kNotFound when there are none.
struct InPlaceBytes {
  size_t open = kNotFound, close = kNotFound;
};
InPlaceBytes in_place_bytes(const char* data, size_t size, size_t start, size_t limit);

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
  bool in_place = false;               // read in the file's buffer, not from a copy
  EventChunk chunk;
};

class WindowPool {
 public:
  // `workers` threads besides the caller's; 0 reads every window on the caller's thread. `capacity`:
  // the readable bytes from `data` on (at least size + 1 + SIMDJSON_PADDING). `keep`: the args keys kept
  // (nullptr: every args object, as a view of the file).
  // `size` is followed: it may shrink (a file cut while it is read incrementally).
  WindowPool(char* data, const size_t& size, size_t capacity, unsigned workers, const ArgKeyFilter* keep = nullptr);
  ~WindowPool();
  WindowPool(const WindowPool&) = delete;
  WindowPool& operator=(const WindowPool&) = delete;

  // The window [start, limit): the one read ahead when it starts there, else read now on this thread
  // (the windows read ahead are dropped then).
  WindowResult take(size_t start, size_t limit);
  // Queues windows from `next` (the start of an event) on to be read ahead, unless they are; only windows
  // that lie in the first `filled` bytes (those read so far).
  void read_ahead(size_t next, size_t filled = kNotFound);

 private:
  struct Reader;
  struct Task;
  void work(Reader& reader);
  void run(Reader& reader, Task& task);
  void read_window(Reader& reader, bool may_patch, WindowResult& out);
  // Reads a queued task with `lock` (on mutex_) released meanwhile; false when reading threw (kept in
  // failure_ for the caller's thread).
  bool read_task(Reader& reader, Task& task, bool may_patch, std::unique_lock<std::mutex>& lock);
  void finish(Task& task);  // with mutex_ held
  void drop_ahead();        // with mutex_ held

  char* data_;
  const size_t& size_;
  size_t capacity_;
  std::unique_ptr<Reader> own_;  // the caller's
  std::vector<std::unique_ptr<Reader>> readers_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Task>> ahead_;
  size_t ahead_end_ = kNotFound;
  size_t dropped_reading_ = 0;  // dropped tasks still being read: the caller patches no byte until they end
  bool stop_ = false;
  std::exception_ptr failure_;
};

}  // namespace ptadvise::detail
