/* Preloaded into ptadvise by the out-of-memory tests (LD_PRELOAD): malloc fails now and then, as it does
 * when a process reaches its memory limit, at points an address-space limit would not reach on its own
 * (a worker thread's window copy, a parser's buffer, a printer's string). Deterministic for one seed and
 * one order of allocations.
 *   PTADVISE_FAIL_EVERY  one allocation in this many fails (0 or unset: none)
 *   PTADVISE_FAIL_MIN    only allocations of at least this many bytes can fail (default 64)
 *   PTADVISE_FAIL_AFTER  only once this many bytes were asked for (past start-up: the command line, rules)
 *   PTADVISE_FAIL_SEED   which of them fail
 *   PTADVISE_FAIL_WORKERS=1  only on threads other than the main one (their failures are carried over to it) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* (*real_malloc)(size_t);
static unsigned long fail_every, fail_min = 64, fail_after, seed = 1, workers_only;
static atomic_size_t asked;
static atomic_uint eligible;

static unsigned long number(const char* name, unsigned long fallback) {
  const char* text = getenv(name);
  return text != NULL && *text != '\0' ? strtoul(text, NULL, 10) : fallback;
}

static void setup(void) {
  fail_every = number("PTADVISE_FAIL_EVERY", 0);
  fail_min = number("PTADVISE_FAIL_MIN", 64);
  fail_after = number("PTADVISE_FAIL_AFTER", 0);
  seed = number("PTADVISE_FAIL_SEED", 1);
  workers_only = number("PTADVISE_FAIL_WORKERS", 0);
  real_malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
}

void* malloc(size_t size) {
  if (real_malloc == NULL) setup();
  if (fail_every > 0 && size >= fail_min && atomic_fetch_add(&asked, size) + size > fail_after &&
      !(workers_only && syscall(SYS_gettid) == getpid())) {
    unsigned x = (atomic_fetch_add(&eligible, 1) + 1) * 2654435761u ^ (unsigned)seed * 40503u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    if (x % fail_every == 0) {
      errno = ENOMEM;  // as the real allocator says it
      return NULL;
    }
  }
  return real_malloc(size);
}
