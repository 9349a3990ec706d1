#include "ptadvise/huge_pages.h"

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <string_view>

#include "ptadvise/io.h"

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PTADVISE_SANITIZED_MALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PTADVISE_SANITIZED_MALLOC 1
#endif

namespace ptadvise {
namespace {

// AddressSanitizer's malloc is not glibc's: the tunables would change nothing.
#ifdef PTADVISE_SANITIZED_MALLOC
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

// Set only between the two starts: GLIBC_TUNABLES as the user had it, after a '=' ("=" alone: empty), or
// "unset". Its presence also stops a second restart.
constexpr const char* kEarlierTunables = "PTADVISE_EARLIER_GLIBC_TUNABLES";
// Huge pages for what malloc maps and for the heap as it grows. glibc advises only the main arena's heap as
// it grows, not the heaps of the arenas it makes for other threads past their first size: one arena for
// all threads (their small blocks still come from per-thread caches) keeps the loader's worker threads on
// huge pages too. On two cores, one arena took a 279 MB check from 0.57 s to 0.48 s of wall time and a
// two-rank job from 1.02 s to 0.88 s, with 9,400 page faults instead of 19,500 and 17,900 instead of 34,500.
constexpr const char* kTunables[] = {"glibc.malloc.hugetlb=1", "glibc.malloc.arena_max=1"};

// The system's policy: "[madvise]" in "always [madvise] never".
bool mode_is_madvise() {
  std::string text;
  return !read_small_file("/sys/kernel/mm/transparent_hugepage/enabled", text, 4096) &&
         text.find("[madvise]") != std::string::npos;
}

// glibc 2.35 brought glibc.malloc.hugetlb; older ones ignore it, so a restart would only cost time.
bool malloc_knows_huge_pages() {
#if defined(__GLIBC__)
  const char* version = gnu_get_libc_version();
  const int major = std::atoi(version);
  const char* dot = std::strchr(version, '.');
  const int minor = dot != nullptr ? std::atoi(dot + 1) : 0;
  return major > 2 || (major == 2 && minor >= 35);
#else
  return false;
#endif
}

// GLIBC_TUNABLES as the user had it, from the marker's value (`earlier`), and the marker gone.
void restore_user_tunables(const char* earlier) {
  if (earlier[0] == '=') {
    ::setenv("GLIBC_TUNABLES", earlier + 1, 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
  ::unsetenv(kEarlierTunables);
}

}  // namespace

void use_huge_pages(char** argv) noexcept {
  if (const char* earlier = std::getenv(kEarlierTunables)) {
    restore_user_tunables(earlier);  // the second start: the user's environment, for the programs it starts
    return;
  }
  if (!kGlibcMalloc || argv == nullptr || argv[0] == nullptr) return;
  if (const char* wanted = std::getenv("PTADVISE_HUGE_PAGES"); wanted != nullptr && std::strcmp(wanted, "0") == 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr) return;

  // setenv copies; `tunables` is not read after the first setenv, which may replace it.
  std::string earlier, combined;
  try {
    if (!malloc_knows_huge_pages() || !mode_is_madvise()) return;
    earlier = tunables == nullptr ? std::string("unset") : "=" + std::string(tunables);
    combined = tunables == nullptr ? std::string() : std::string(tunables);
    for (const char* tunable : kTunables) {
      const std::string_view name = std::string_view(tunable).substr(0, std::string_view(tunable).find('='));
      if (combined.find(name) != std::string::npos) continue;  // the user's value stands
      if (!combined.empty()) combined += ':';
      combined += tunable;
    }
  } catch (const std::bad_alloc&) {
    return;  // no memory for a few short strings: the check will say so soon enough
  }
  if (::setenv(kEarlierTunables, earlier.c_str(), 1) != 0) return;
  if (::setenv("GLIBC_TUNABLES", combined.c_str(), 1) != 0) {
    ::unsetenv(kEarlierTunables);
    return;
  }
  ::execv("/proc/self/exe", argv);
  // Not executed (no /proc, a deleted executable): go on with small pages, the environment as it was.
  restore_user_tunables(earlier.c_str());
}

void reuse_freed_memory() noexcept {
#if defined(__GLIBC__)
  if (!kGlibcMalloc) return;
  // Setting the threshold also ends glibc's own raising of it, which starts at 128 KiB and rises only as
  // mapped blocks are freed: until then every block of a window's columns was mapped, faulted in and
  // unmapped. Blocks past 32 MiB (the columns of the largest traces) still get mappings: they are few, and
  // given back whole when freed.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // What is freed at the top of the heap stays for the next allocation (default: given back past 128 KiB).
  ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

}  // namespace ptadvise
