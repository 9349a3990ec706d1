// Running code that is not exception-safe (RE2: google/re2#124; yaml-cpp: jbeder/yaml-cpp#459) where
// memory may run out. A std::bad_alloc thrown through such code unwinds half-built objects and corrupts
// the heap, so inside a shield an allocation that fails never throws: a reserve held for the whole
// process is released and the allocation tried again. Outside shields allocations fail as usual
// (std::bad_alloc, the one-line error). Exceptions the guarded code throws itself pass through.
#pragma once

#include <utility>

namespace ptadvise {

class BadAllocShield {
 public:
  // Throws std::bad_alloc here, before the guarded code runs, when the reserve cannot be set aside.
  BadAllocShield();
  ~BadAllocShield();
  BadAllocShield(const BadAllocShield&) = delete;
  BadAllocShield& operator=(const BadAllocShield&) = delete;
};

// f() inside a shield.
template <typename F>
decltype(auto) without_bad_alloc_inside(F&& f) {
  BadAllocShield shield;
  return std::forward<F>(f)();
}

// What ends the process when memory stays short inside a shield after the reserve is spent (the
// guarded code cannot be unwound): set by the command to print its one line and exit. Without it,
// std::terminate().
using OutOfMemoryExit = void (*)() noexcept;
void set_out_of_memory_exit(OutOfMemoryExit exit) noexcept;

}  // namespace ptadvise
