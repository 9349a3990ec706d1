// BadAllocShield: inside it an allocation that fails is served from the reserve instead of throwing
// through code that cannot be unwound (RE2, yaml-cpp). Each case runs in a fresh process (this test
// program run again for that case alone: a heap without the free space earlier tests leave, which would
// serve the allocations) whose address space is then limited (RLIMIT_AS), so allocations fail for real.
#include <doctest/doctest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <new>

#include "case_alone.h"
#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/kernel_class.h"

#ifndef PTADVISE_FAILING_MALLOC
TEST_CASE("bad alloc shield: skipped under the sanitizers") {
  MESSAGE("skipped under the sanitizers: their allocator does not call the new-handler");
}
#else
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kThrew = 3;

constexpr const char* kShieldCaseVariable = "PTADVISE_SHIELD_CASE";

// Runs the skipped test case "bad alloc shield case: NAME" in a fresh copy of this program: the result
// its body gave, or a negative code when it did not run to its end (case_alone.h).
int run_shield_case(const std::string& name) {
  return ptadvise::testing::run_case_alone("bad alloc shield case: " + name, kShieldCaseVariable);
}

// The case's body, when this process runs it for run_shield_case(): ends the process with its result.
template <typename Body>
void as_case(Body body) {
  if (!ptadvise::testing::running_alone(kShieldCaseVariable)) return;
  mallopt(M_MMAP_THRESHOLD, 1 << 20);  // fixed: large blocks are mappings of their own, which the limit sees
  ptadvise::testing::end_case(body());
}

// From here the process may map only `spare` bytes more than it maps now.
void limit_address_space(size_t spare) {
  unsigned long pages = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr || std::fscanf(statm, "%lu", &pages) != 1) ptadvise::testing::end_case(90);
  std::fclose(statm);
  const rlimit limit{pages * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + spare, RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &limit) != 0) ptadvise::testing::end_case(91);
}

char* volatile g_kept;  // the blocks are kept: an allocation nobody uses may be left out by the compiler

// Allocates and touches `bytes`: 0, or kThrew when std::bad_alloc reached here.
int allocate(size_t bytes) {
  try {
    g_kept = new char[bytes];
    std::memset(g_kept, 1, bytes);
  } catch (const std::bad_alloc&) {
    return kThrew;
  }
  return 0;
}

// Compiles a kernel family table and classifies names with it: 0, kThrew, or another code on a wrong result.
int compile_and_classify() {
  const std::string table = R"(version: 1
rules:
  - family: matmul-tensor-core
    regex: ['(sm80|sm90)_xmma_gemm_\w+_(f16|bf16)', 'ampere_(fp16|bf16)_s\d+gemm']
    glob: ['*cutlass*tensorop*gemm*']
    examples: [sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64]
  - family: elementwise
    regex: ['elementwise_kernel', 'vectorized_\w+_kernel<\d+']
    examples: ['void at::native::vectorized_elementwise_kernel<4, float>']
)";
  try {
    auto parsed = ptadvise::KernelClassifier::parse(table, "table.yaml");
    auto* classifier = std::get_if<ptadvise::KernelClassifier>(&parsed);
    if (classifier == nullptr) return 12;
    for (int i = 0; i < 200; ++i) {
      const std::string name = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize" + std::to_string(i) + "x128";
      if (classifier->classify(name) != ptadvise::KernelFamily::MatmulTensorCore) return 13;
    }
  } catch (const std::bad_alloc&) {
    return kThrew;
  }
  return 0;
}

}  // namespace

// The cases, each run alone in a fresh process by the tests below.
TEST_CASE("bad alloc shield case: inside" * doctest::skip()) {
  as_case([] {
    ptadvise::BadAllocShield shield;
    limit_address_space(2 * kMiB);
    return allocate(8 * kMiB);
  });
}
TEST_CASE("bad alloc shield case: outside" * doctest::skip()) {
  as_case([] {
    { ptadvise::BadAllocShield shield; }
    limit_address_space(2 * kMiB);
    return allocate(8 * kMiB);
  });
}
TEST_CASE("bad alloc shield case: spent" * doctest::skip()) {
  as_case([] {
    {
      ptadvise::BadAllocShield shield;
      limit_address_space(2 * kMiB);
      if (allocate(8 * kMiB) != 0) return 10;
    }
    limit_address_space(1 * kMiB);  // no room for a new reserve
    try {
      ptadvise::BadAllocShield shield;
      return 11;  // would run the guarded code without a reserve
    } catch (const std::bad_alloc&) {
      return 0;
    }
  });
}
TEST_CASE("bad alloc shield case: exhausted" * doctest::skip()) {
  as_case([] {
    ptadvise::set_out_of_memory_exit([]() noexcept { ptadvise::testing::end_case(42); });
    ptadvise::BadAllocShield shield;
    limit_address_space(1 * kMiB);
    allocate(64 * kMiB);
    return 0;
  });
}
TEST_CASE("bad alloc shield case: kernel table" * doctest::skip()) {
  as_case([] {
    const char* spare = std::getenv("PTADVISE_SHIELD_SPARE");
    limit_address_space(spare != nullptr ? std::strtoul(spare, nullptr, 10) : 0);
    return compile_and_classify();
  });
}

TEST_CASE("bad alloc shield: a failed allocation inside is served from the reserve; outside it throws") {
  // 8 MiB past a limit 2 MiB away: inside a shield the 16 MiB reserve is released and the allocation
  // tried again; outside one (the reserve set aside, still held) it throws as it always did.
  CHECK(run_shield_case("inside") == 0);
  CHECK(run_shield_case("outside") == kThrew);
}

TEST_CASE("bad alloc shield: a spent reserve is set aside again, or the shield refuses before the code runs") {
  CHECK(run_shield_case("spent") == 0);
}

TEST_CASE("bad alloc shield: memory short past the reserve ends the process through the exit set for it") {
  CHECK(run_shield_case("exhausted") == 42);
}

TEST_CASE("bad alloc shield: a case that does not exist is not taken for a result") {
  // doctest exits 0 when its filter matches nothing; a renamed case must fail the checks above, not pass.
  CHECK(run_shield_case("no such case") == ptadvise::testing::kCaseNotRun);
}

TEST_CASE("bad alloc shield: compiling and matching the kernel table with memory short never ends in a signal") {
  // With the address space limited at every step of 256 KiB up to 20 MiB past what the process maps (the
  // reserve takes 16), the table compiles and classifies, or std::bad_alloc reaches here; nothing else.
  int completed = 0, refused = 0;
  for (size_t spare = 0; spare <= 20 * kMiB; spare += 256 * 1024) {
    CAPTURE(spare);
    setenv("PTADVISE_SHIELD_SPARE", std::to_string(spare).c_str(), 1);
    const int code = run_shield_case("kernel table");
    CAPTURE(code);
    CHECK((code == 0 || code == kThrew));
    (code == 0 ? completed : refused) += 1;
  }
  unsetenv("PTADVISE_SHIELD_SPARE");
  CHECK(completed > 0);
  CHECK(refused > 0);
}
#endif
