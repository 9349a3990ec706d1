// Reading windows of the event list, ahead and on every core (event_windows.h).
#include "event_windows.h"

#include <cstring>
#include <system_error>

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
  WindowResult result;
};

namespace {

void read_window(ondemand::parser& parser, ChunkParser& events, std::unique_ptr<char[]>& copy, size_t& copy_size,
                 const char* data, WindowResult& out) {
  const size_t start = out.start, limit = out.limit;
  const size_t length = limit - start;
  const size_t needed = length + 2 + simdjson::SIMDJSON_PADDING;
  if (copy_size < needed) {
    copy.reset();
    copy = std::unique_ptr<char[]>(new char[needed]);  // not zero-filled: written below
    copy_size = needed;
  }
  char* text = copy.get();
  text[0] = '[';
  std::memcpy(text + 1, data + start, length);
  text[length + 1] = ']';
  std::memset(text + length + 2, 0, simdjson::SIMDJSON_PADDING);
  const size_t end_in_copy = length + 1;  // where the window's bytes end in the copy
  auto in_file = [start](size_t in_copy) { return start + in_copy - 1; };

  events.chunk().reserve(length / 300 + 16);
  events.set_origin(text + 1, start);
  ondemand::document doc;
  if (parser.iterate(text, length + 2, copy_size).get(doc)) {
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
      ondemand::value element;
      if (element_result.get(element)) {
        out.closed = false;
        break;
      }
      const auto element_in_copy = static_cast<size_t>(element.raw_json_token().data() - text);
      const size_t element_start = in_file(element_in_copy);
      ondemand::object object;
      auto error = element.get_object().get(object);
      if (error == simdjson::INCORRECT_TYPE) {
        size_t end = skip_value(text, end_in_copy, element_in_copy);
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
    const size_t end = skip_value(text, end_in_copy, out.last_object - start + 1);
    if (end != kNotFound) out.last_object_end = in_file(end);
  }
  out.chunk = events.take();
}

}  // namespace

WindowPool::WindowPool(const char* data, size_t size, unsigned workers)
    : data_(data), size_(size), own_(std::make_unique<Reader>()) {
  for (unsigned w = 0; w < workers; ++w) {
    try {
      readers_.push_back(std::make_unique<Reader>());
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
  read_window(reader.parser, reader.events, reader.copy, reader.copy_size, data_, task.result);
}

void WindowPool::work(Reader& reader) {
  std::unique_lock lock(mutex_);
  while (true) {
    std::shared_ptr<Task> task;
    changed_.wait(lock, [&] {
      if (stop_) return true;
      for (auto& queued : ahead_) {
        if (queued->state == Task::State::Queued) {
          task = queued;
          return true;
        }
      }
      return false;
    });
    if (stop_) return;
    task->state = Task::State::Reading;
    lock.unlock();
    try {
      run(reader, *task);
    } catch (...) {  // out of memory: the caller rethrows it
      lock.lock();
      if (!failure_) failure_ = std::current_exception();
      task->state = Task::State::Done;
      changed_.notify_all();
      continue;
    }
    lock.lock();
    task->state = Task::State::Done;
    changed_.notify_all();
  }
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
        lock.unlock();
        run(*own_, *task);
      } else {
        changed_.wait(lock, [&] { return task->state == Task::State::Done; });
      }
      if (failure_) std::rethrow_exception(failure_);
      return std::move(task->result);
    }
    ahead_.clear();  // not where the list goes on: windows being read finish into tasks nobody takes
    ahead_end_ = kNotFound;
    if (failure_) std::rethrow_exception(failure_);
  }
  Task here;
  here.result.start = start;
  here.result.limit = limit;
  run(*own_, here);
  return std::move(here.result);
}

void WindowPool::read_ahead(size_t next) {
  if (threads_.empty()) return;
  const size_t depth = 2 * (threads_.size() + 1);
  {
    std::lock_guard lock(mutex_);
    if (ahead_.empty() || ahead_.front()->result.start != next) {
      ahead_.clear();  // windows being read finish into tasks nobody takes
      ahead_end_ = next;
    }
    while (ahead_.size() < depth && ahead_end_ != kNotFound) {
      const size_t start = ahead_end_;
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
