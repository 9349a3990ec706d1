#include "fault_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>

namespace ptadvise::detail {
namespace {

// The handler reads these without locks (it may run on any thread, at any time): a slot is published by
// storing `begin` last and withdrawn by clearing it first.
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<size_t> fault{FaultGuard::kNoFault};
};

constexpr int kSlots = 256;  // mappings watched at once: one per trace being loaded
Slot slots[kSlots];
struct sigaction previous_action {};
uintptr_t page_size = 4096;  // set before the handler is installed (sysconf is not async-signal-safe)

void pass_on(int signal, siginfo_t* info, void* context) {
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 && previous_action.sa_sigaction != nullptr) {
    previous_action.sa_sigaction(signal, info, context);
    return;
  }
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(signal);
    return;
  }
  // The default action: returning re-runs the access, which faults again and ends the process as the
  // kernel would have without us (a synchronous SIGBUS cannot be ignored).
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(SIGBUS, &fallback, nullptr);
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& slot : slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin) continue;
    const uintptr_t end = slot.end.load(std::memory_order_acquire);
    if (address >= end) continue;
    const uintptr_t from = address / page_size * page_size;
    const int saved_errno = errno;
    void* zeros = mmap(reinterpret_cast<void*>(from), end - from, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    errno = saved_errno;
    if (zeros == MAP_FAILED) break;
    size_t offset = from - begin;
    size_t seen = slot.fault.load(std::memory_order_relaxed);
    while (offset < seen && !slot.fault.compare_exchange_weak(seen, offset, std::memory_order_release)) {
    }
    return;
  }
  pass_on(signal, info, context);
}

bool install_handler() {
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [] {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) page_size = static_cast<uintptr_t>(page);
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    installed = sigaction(SIGBUS, &action, &previous_action) == 0;
  });
  return installed;
}

}  // namespace

std::unique_ptr<FaultGuard> FaultGuard::watch(char* begin, size_t length) {
  if (begin == nullptr || length == 0 || !install_handler()) return nullptr;
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!slots[i].used.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
    slots[i].fault.store(kNoFault, std::memory_order_relaxed);
    slots[i].end.store(reinterpret_cast<uintptr_t>(begin) + length, std::memory_order_release);
    slots[i].begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
    return std::unique_ptr<FaultGuard>(new FaultGuard(i));
  }
  return nullptr;
}

FaultGuard::~FaultGuard() {
  Slot& slot = slots[slot_];
  slot.begin.store(0, std::memory_order_release);
  slot.end.store(0, std::memory_order_release);
  slot.used.store(false, std::memory_order_release);
}

size_t FaultGuard::fault_offset() const { return slots[slot_].fault.load(std::memory_order_acquire); }

}  // namespace ptadvise::detail
