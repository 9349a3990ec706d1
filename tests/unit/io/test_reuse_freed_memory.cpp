// reuse_freed_memory (io/huge_pages.h): blocks of megabytes come from the heap, not mappings of their own,
// and what is freed stays with the process. Checked in a fresh run of this test program for that case
// alone: its malloc policy does not leak into the other tests (some measure the loader's peak memory), and
// glibc's threshold has not been raised by the blocks earlier tests freed.
#include <doctest/doctest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "case_alone.h"
#include "ptadvise/huge_pages.h"

#ifndef PTADVISE_FAILING_MALLOC
TEST_CASE("reuse freed memory: skipped under the sanitizers") {
  MESSAGE("skipped under the sanitizers: their allocator is not glibc's malloc, which mallopt tunes");
}
#else
namespace {

constexpr size_t kBlock = size_t{8} << 20;  // above glibc's first threshold (128 KiB), below 32 MiB

// Allocates and frees a block of 8 MiB. 0 when it came from the heap and the heap kept it after the free,
// 1 when it was a mapping of its own, 2 when the heap gave it back, 3 when the allocation failed.
int allocate_and_free() {
  const struct mallinfo2 before = mallinfo2();
  void* block = std::malloc(kBlock);
  if (block == nullptr) return 3;
  static_cast<volatile char*>(block)[kBlock - 1] = 1;
  const struct mallinfo2 holding = mallinfo2();
  if (holding.hblks > before.hblks) return 1;
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  return after.arena + kBlock / 2 < holding.arena ? 2 : 0;
}

constexpr const char* kReuseCaseVariable = "PTADVISE_REUSE_CASE";

// Runs the skipped case "reuse freed memory case: NAME" in a fresh run of this program: allocate_and_free()
// there, or a negative code when the case did not run to its end (case_alone.h).
int run_reuse_case(const char* name) {
  return ptadvise::testing::run_case_alone(std::string("reuse freed memory case: ") + name, kReuseCaseVariable);
}

}  // namespace

TEST_CASE("reuse freed memory case: reused" * doctest::skip()) {
  if (!ptadvise::testing::running_alone(kReuseCaseVariable)) return;
  ptadvise::reuse_freed_memory();
  ptadvise::testing::end_case(allocate_and_free());
}

TEST_CASE("reuse freed memory case: default" * doctest::skip()) {
  if (!ptadvise::testing::running_alone(kReuseCaseVariable)) return;
  ptadvise::testing::end_case(allocate_and_free());
}

TEST_CASE("reuse freed memory: a block of megabytes comes from the heap and stays there once freed") {
  CHECK(run_reuse_case("reused") == 0);
  // Without it glibc maps such a block of its own (the case the call is there for).
  CHECK(run_reuse_case("default") == 1);
}
#endif
