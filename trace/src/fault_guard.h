// Internal to trace/: reading a mapped file without ever dying of SIGBUS.
//
// A page of a file mapping faults with SIGBUS when the file no longer reaches it (truncated, or rewritten
// in place by `cp`, `rsync --inplace` or an NFS writer, while it is read) or when the disk cannot read it.
// A FaultGuard watches one mapping: on such a fault inside it, a process-wide SIGBUS handler maps zero
// pages over the rest of the mapping and notes where, and the access goes on, reading zeros (which no
// scan of the loader takes for JSON). The reader then asks fault_offset() and treats the file as cut
// there. Faults outside every watched mapping go to the handler that was there before (by default, the
// process dies of SIGBUS as it would have).
#pragma once

#include <cstddef>
#include <memory>

namespace ptadvise::detail {

class FaultGuard {
 public:
  static constexpr size_t kNoFault = static_cast<size_t>(-1);

  // Watches [begin, begin + length) (page-aligned); nullptr when the handler cannot be installed or too
  // many mappings are watched at once (the caller then reads the file instead of mapping it).
  static std::unique_ptr<FaultGuard> watch(char* begin, size_t length);
  ~FaultGuard();  // stops watching; the mapping must not be read after this
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;

  // Offset (from begin) of the first page that faulted, rounded down to its page; kNoFault if none has.
  size_t fault_offset() const;

 private:
  explicit FaultGuard(int slot) : slot_(slot) {}
  int slot_;
};

}  // namespace ptadvise::detail
