#include "ptadvise/bad_alloc_shield.h"

#include <sys/mman.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <new>

namespace ptadvise {
namespace {

// Larger than any single allocation RE2 makes under the memory limits its users set (64 MiB of program
// and DFA in all, in pieces): released, it lets the failed allocation and the rest of the match succeed.
// A mapping of its own, never touched, so it costs address space, not resident memory. Not malloc: with
// the mmap threshold raised (reuse_freed_memory, huge_pages.h) 16 MiB would come from the heap, whose
// huge pages fault in the 2 MiB around each chunk header (4 MiB resident for a block never used).
constexpr size_t kReserveBytes = size_t{16} << 20;
// Allocations that still fail after the reserve is spent: tried again this many times (a failure may be
// passing: another thread freeing memory) before the process ends.
constexpr int kRetries = 32;

std::atomic<void*> g_reserve{nullptr};
std::atomic<OutOfMemoryExit> g_exit{nullptr};
thread_local int t_depth = 0;    // shields open on this thread
thread_local int t_retries = 0;  // failures inside the outermost shield since the reserve ran out

void handle_allocation_failure() {
  // Outside shields, as without a handler; but not while an exception unwinds the stack: the allocation
  // is then made by a destructor (nlohmann::json's allocates), and a throw from it ends the process.
  if (t_depth == 0 && std::uncaught_exceptions() == 0) throw std::bad_alloc();
  if (void* reserve = g_reserve.exchange(nullptr)) {
    ::munmap(reserve, kReserveBytes);
    return;  // operator new tries again
  }
  if (++t_retries <= kRetries) return;
  if (OutOfMemoryExit exit = g_exit.load()) exit();
  std::terminate();
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] { std::set_new_handler(handle_allocation_failure); });
}

}  // namespace

BadAllocShield::BadAllocShield() {
  install_handler();
  if (t_depth == 0) {
    t_retries = 0;
    if (g_reserve.load() == nullptr) {
      // Not operator new: its failure must not reach the handler.
      void* reserve = ::mmap(nullptr, kReserveBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (reserve == MAP_FAILED) throw std::bad_alloc();
      void* expected = nullptr;
      if (!g_reserve.compare_exchange_strong(expected, reserve)) ::munmap(reserve, kReserveBytes);
    }
  }
  ++t_depth;
}

BadAllocShield::~BadAllocShield() { --t_depth; }

void set_out_of_memory_exit(OutOfMemoryExit exit) noexcept { g_exit.store(exit); }

}  // namespace ptadvise
