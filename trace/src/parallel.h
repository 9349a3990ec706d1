// Internal to trace/: running one piece of work on several threads at once.
#pragma once

#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace ptadvise::detail {

// Calls `work` on the calling thread and on up to `threads` - 1 more, and returns once every call has
// returned. `work` takes its share itself (an atomic counter over its items), so a thread that cannot be
// had (process limits) only leaves more to the others. An exception (out of memory) thrown on any thread
// is rethrown here after all have ended.
template <class Work>
void run_on_threads(size_t threads, Work& work) {
  std::exception_ptr failure;
  std::mutex failing;
  auto guarded = [&] {
    try {
      work();
    } catch (...) {
      std::lock_guard lock(failing);
      if (!failure) failure = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> others;
    for (size_t t = 1; t < threads; ++t) {
      try {
        others.emplace_back(guarded);
      } catch (const std::system_error&) {
        break;
      }
    }
    guarded();
  }  // joins
  if (failure) std::rethrow_exception(failure);
}

}  // namespace ptadvise::detail
