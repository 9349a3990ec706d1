// Transparent huge pages for the heap: large traces become arrays of megabytes written right after they
// are allocated, and with 4 KiB pages each 4 KiB of them is a page fault (docs/TRACE_LOADING.md, "Huge
// pages").
#pragma once

namespace ptadvise {

// Call first thing in main, before any thread starts. Where the system gives transparent huge pages only
// to memory that asks for them ("madvise": Debian's default), glibc's malloc asks only when the
// environment held GLIBC_TUNABLES=glibc.malloc.hugetlb=1 when the process started, so the process
// executes itself again, once, with that added (and glibc.malloc.arena_max=1, unless the user set it:
// the heaps of other threads' arenas get no huge pages as they grow). The second start gives
// GLIBC_TUNABLES back the value the user set (or none), so the programs ptadvise starts (`ptadvise run`)
// see the user's environment.
// Nothing happens when PTADVISE_HUGE_PAGES=0, when GLIBC_TUNABLES already sets glibc.malloc.hugetlb, when
// the system's mode is "always" or "never" (or unknown), in sanitizer builds, or when the executable
// cannot be executed again (then the process goes on as it is).
void use_huge_pages(char** argv) noexcept;

// Call next, before any thread starts. Blocks up to 32 MiB come from the heap instead of mappings of their
// own, and freed memory stays with the process instead of going back to the system: the loader and the
// analysis allocate and free blocks of megabytes by the hundred (window columns, merge buffers, the what-if
// graph's arrays), and each fresh mapping is a round of page faults (docs/TRACE_LOADING.md, "Huge pages").
// No effect in sanitizer builds or without glibc.
void reuse_freed_memory() noexcept;

}  // namespace ptadvise
