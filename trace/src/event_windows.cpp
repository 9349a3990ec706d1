// Reading windows of the event list, ahead and on every core (event_windows.h).
#include "event_windows.h"

#include <cstring>
#include <system_error>

#include "checked_iterate.h"

namespace ptadvise::detail {

namespace ondemand = simdjson::ondemand;

namespace {

bool is_space_or_tab(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Whether the line break at `newline` is followed by an event ('{' after indentation) and preceded by
// the end of one ("}," and white space): the window can end at that '{'.
size_t event_after_line_break(const char* data, size_t size, size_t newline, size_t floor) {
  size_t next = newline + 1;
  while (next < size && is_space_or_tab(data[next])) ++next;
  if (next >= size || data[next] != '{') return kNotFound;
  size_t before = newline;
  while (before > floor && is_json_space(data[before - 1])) --before;
  if (before <= floor + 1 || data[before - 1] != ',') return kNotFound;
  --before;
  while (before > floor && is_json_space(data[before - 1])) --before;
  if (before <= floor || data[before - 1] != '}') return kNotFound;
  return next;
}

}  // namespace

size_t window_limit(const char* data, size_t size, size_t start) {
  if (size - start <= kWindowBytes) return size;
  const size_t cut = start + kWindowBytes;
  const size_t floor = start + kWindowBytes / 2;
  // An event that begins a line: a line break never lies inside a JSON string, so neither does the cut,
  // and every event of the window is whole (pretty-printed traces spread an event over many lines).
  size_t last_break = kNotFound;
  for (size_t end = cut; end > floor;) {
    const void* found = memrchr(data + floor, '\n', end - floor);
    if (found == nullptr) break;
    const auto newline = static_cast<size_t>(static_cast<const char*>(found) - data);
    if (last_break == kNotFound) last_break = newline + 1;
    if (size_t next = event_after_line_break(data, size, newline, floor); next != kNotFound) return next;
    end = newline;
  }
  if (last_break != kNotFound) return last_break;
  // Minified JSON: cut after a "}," (inside a string this only costs a slower re-read of the window).
  for (size_t i = cut; i > floor; --i) {
    if (data[i - 1] == ',' && data[i - 2] == '}') return i;
  }
  return cut;
}

struct WindowPool::Reader {
  ondemand::parser parser;
  ChunkParser events;
  std::unique_ptr<char[]> copy;
  size_t copy_size = 0;
};

struct WindowPool::Task {
  enum class State { Queued, Reading, Done };
  State state = State::Queued;
  bool dropped = false;  // taken out of the queue while a worker was reading it
  WindowResult result;
};

InPlaceBytes in_place_bytes(const char* data, size_t size, size_t start, size_t limit) {
  if (start == 0 || limit <= start) return {};
  const char before = data[start - 1];
  if (before != '[' && !is_json_space(before)) return {};  // minified: "},{"
  size_t close = limit;
  while (close > start && is_json_space(data[close - 1])) --close;
  if (close == limit && limit != size) return {};  // no white space ends the window
  if (close == start) return {};
  return {start - 1, close};
}

namespace {

// Restores the bytes patched for an in-place window, also when reading it throws (out of memory).
class PatchedBytes {
 public:
  PatchedBytes(char* data, InPlaceBytes at) : data_(data), at_(at), open_(data[at.open]), close_(data[at.close]) {
    data_[at_.open] = '[';
    data_[at_.close] = ']';
  }
  ~PatchedBytes() {
    data_[at_.open] = open_;
    data_[at_.close] = close_;
  }
  PatchedBytes(const PatchedBytes&) = delete;
  PatchedBytes& operator=(const PatchedBytes&) = delete;

 private:
  char* data_;
  InPlaceBytes at_;
  char open_, close_;
};

// `text` holds '[', the window's bytes from `out.start` on, and a ']' at `close_in_text`, with readable
// bytes up to `capacity`.
void read_window_text(ondemand::parser& parser, ChunkParser& events, const char* text, size_t close_in_text,
                      size_t capacity, WindowResult& out) {
  const size_t start = out.start;
  auto in_file = [start](size_t in_text) { return start + in_text - 1; };

  events.chunk().reserve((out.limit - start) / 300 + 16);
  events.set_origin(text + 1, start, text + close_in_text);
  ondemand::document doc;
  if (checked_iterate(parser, text, close_in_text + 1, capacity, doc)) {
    out.stage1_failed = true;
    out.chunk = events.take();
    return;
  }
  ondemand::array array;
  out.resume = start;
  out.closed = false;
  if (doc.get_array().get(array) == simdjson::SUCCESS) {
    out.closed = true;
    for (auto element_result : array) {
      if (element_result.error()) {
        out.closed = false;
        break;
      }
      // A reference, not a copy: GCC copies simdjson's small iterator structs, just written field by field,
      // with one 16-byte load that cannot be forwarded from those stores (a stall per copy).
      ondemand::value& element = element_result.value_unsafe();
      const auto element_in_text = static_cast<size_t>(element.raw_json_token().data() - text);
      const size_t element_start = in_file(element_in_text);
      ondemand::object object;
      auto error = element.get_object().get(object);
      if (error == simdjson::INCORRECT_TYPE) {
        size_t end = skip_value(text, close_in_text, element_in_text);
        if (end == kNotFound) {
          out.closed = false;
          out.failed_at = element_start;
          out.failed_at_event = true;
          break;
        }
        ++events.chunk().events_seen;
        events.note_malformed(element_start, "expected an object for an event");
        out.resume = in_file(end);
        out.last_object = kNotFound;
        continue;
      }
      if (error || events.parse_event(object, doc, element_start) == EventStatus::Fatal) {
        out.closed = false;
        out.failed_at = element_start;
        out.failed_at_event = true;
        break;
      }
      out.last_object = element_start;
    }
  }
  if (out.last_object != kNotFound) {
    const size_t end = skip_value(text, close_in_text, out.last_object - start + 1);
    if (end != kNotFound) out.last_object_end = in_file(end);
  }
  out.chunk = events.take();
}

}  // namespace

void WindowPool::read_window(Reader& reader, bool may_patch, WindowResult& out) {
  const size_t start = out.start, limit = out.limit;
  if (may_patch) {
    if (const InPlaceBytes at = in_place_bytes(data_, size_, start, limit); at.open != kNotFound) {
      PatchedBytes patched(data_, at);
      out.in_place = true;
      read_window_text(reader.parser, reader.events, data_ + at.open, at.close - at.open, capacity_ - at.open, out);
      return;
    }
  }
  const size_t length = limit - start;
  const size_t needed = length + 2 + simdjson::SIMDJSON_PADDING;
  if (reader.copy_size < needed) {
    // Size zero first: when the allocation throws (out of memory), a worker goes on to its next window and
    // must not take the freed copy for one still this large.
    reader.copy.reset();
    reader.copy_size = 0;
    reader.copy = std::unique_ptr<char[]>(new char[needed]);  // not zero-filled: written below
    reader.copy_size = needed;
  }
  char* text = reader.copy.get();
  text[0] = '[';
  std::memcpy(text + 1, data_ + start, length);
  text[length + 1] = ']';
  std::memset(text + length + 2, 0, simdjson::SIMDJSON_PADDING);
  read_window_text(reader.parser, reader.events, text, length + 1, reader.copy_size, out);
}

WindowPool::WindowPool(char* data, const size_t& size, size_t capacity, unsigned workers, const ArgKeyFilter* keep)
    : data_(data), size_(size), capacity_(capacity), own_(std::make_unique<Reader>()) {
  own_->events.set_arg_keys(keep);
  for (unsigned w = 0; w < workers; ++w) {
    try {
      readers_.push_back(std::make_unique<Reader>());
      readers_.back()->events.set_arg_keys(keep);
      threads_.emplace_back([this, reader = readers_.back().get()] { work(*reader); });
    } catch (const std::system_error&) {
      readers_.pop_back();
      break;  // no thread to be had: fewer workers
    }
  }
}

WindowPool::~WindowPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    ahead_.clear();
  }
  changed_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void WindowPool::run(Reader& reader, Task& task) {
  // Only the caller's thread patches bytes (its windows lie before every window queued for the workers,
  // and it waits for workers still reading dropped windows); workers read copies and never write.
  read_window(reader, &reader == own_.get(), task.result);
}

void WindowPool::drop_ahead() {
  for (auto& task : ahead_) {
    if (task->state == Task::State::Reading) {
      task->dropped = true;
      ++dropped_reading_;
    }
  }
  ahead_.clear();
}

void WindowPool::finish(Task& task) {
  task.state = Task::State::Done;
  if (task.dropped) --dropped_reading_;
  changed_.notify_all();
}

void WindowPool::work(Reader& reader) {
  std::unique_lock lock(mutex_);
  while (true) {
    std::shared_ptr<Task> task;
    // After a failure (out of memory) no worker reads on: the caller's thread rethrows it at its next take,
    // and a reader whose read threw may hold part of that window.
    changed_.wait(lock, [&] {
      if (stop_ || failure_) return true;
      for (auto& queued : ahead_) {
        if (queued->state == Task::State::Queued) {
          task = queued;
          return true;
        }
      }
      return false;
    });
    if (stop_ || failure_) return;
    read_task(reader, *task, &reader == own_.get(), lock);
  }
}

bool WindowPool::read_task(Reader& reader, Task& task, bool may_patch, std::unique_lock<std::mutex>& lock) {
  task.state = Task::State::Reading;
  lock.unlock();
  bool read = true;
  try {
    read_window(reader, may_patch, task.result);
  } catch (...) {  // out of memory: the caller's thread rethrows it
    read = false;
    lock.lock();
    if (!failure_) failure_ = std::current_exception();
  }
  if (read) lock.lock();
  finish(task);
  return read;
}

WindowResult WindowPool::take(size_t start, size_t limit) {
  std::shared_ptr<Task> task;
  {
    std::unique_lock lock(mutex_);
    if (!ahead_.empty() && ahead_.front()->result.start == start && ahead_.front()->result.limit == limit) {
      task = ahead_.front();
      ahead_.pop_front();
      if (task->state == Task::State::Queued) {
        task->state = Task::State::Reading;  // nobody took it yet: read it here
        changed_.wait(lock, [&] { return dropped_reading_ == 0; });
        lock.unlock();
        run(*own_, *task);
      } else {
        // While a worker reads this window, read windows queued after it here (from a copy: the bytes
        // around them may lie in windows being read), so that both cores parse instead of one waiting.
        while (task->state != Task::State::Done) {
          std::shared_ptr<Task> later;
          for (auto& queued : ahead_) {
            if (queued->state == Task::State::Queued) {
              later = queued;
              break;
            }
          }
          if (!later || !read_task(*own_, *later, false, lock)) break;
        }
        changed_.wait(lock, [&] { return task->state == Task::State::Done; });
      }
      if (failure_) std::rethrow_exception(failure_);
      return std::move(task->result);
    }
    drop_ahead();  // not where the list goes on: windows being read finish into tasks nobody takes
    ahead_end_ = kNotFound;
    changed_.wait(lock, [&] { return dropped_reading_ == 0; });
    if (failure_) std::rethrow_exception(failure_);
  }
  Task here;
  here.result.start = start;
  here.result.limit = limit;
  run(*own_, here);
  return std::move(here.result);
}

void WindowPool::read_ahead(size_t next, size_t filled) {
  if (threads_.empty()) return;
  const size_t depth = 2 * (threads_.size() + 1);
  {
    std::lock_guard lock(mutex_);
    if (ahead_.empty() || ahead_.front()->result.start != next) {
      drop_ahead();  // windows being read finish into tasks nobody takes
      ahead_end_ = next;
    }
    while (ahead_.size() < depth && ahead_end_ != kNotFound) {
      const size_t start = ahead_end_;
      // window_limit() reads up to kWindowBytes on (and a little after a line break): not yet read.
      if (start < size_ && filled < size_ && start + kWindowBytes + 4096 > filled) break;
      if (start >= size_ || data_[start] != '{') {
        ahead_end_ = kNotFound;
        break;
      }
      auto task = std::make_shared<Task>();
      task->result.start = start;
      task->result.limit = window_limit(data_, size_, start);
      ahead_end_ = task->result.limit;
      ahead_.push_back(std::move(task));
    }
  }
  changed_.notify_all();
}

}  // namespace ptadvise::detail
