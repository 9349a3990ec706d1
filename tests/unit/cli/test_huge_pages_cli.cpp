// ptadvise starts again once with glibc's malloc asking for transparent huge pages (io/huge_pages.h); the
// programs it starts must still get the user's environment.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "../advisor/python_check.h"
#include "../advisor/temp_dir.h"
#include "cli_run.h"

namespace {

using ptadvise::testing::read_file;
using ptadvise::testing::TempDir;

// What `ptadvise run` started sees: its own GLIBC_TUNABLES, whether the restart's marker leaked, and the
// GLIBC_TUNABLES ptadvise itself (its parent) was started with, from /proc. glibc ends each tunable it
// reads with a NUL in that copy of the environment, so the pieces after the variable that name a glibc
// tunable are joined again.
const char* kReportEnvironment = R"(import os, sys
def tunables(entries):
    for i, e in enumerate(entries):
        if e.startswith("GLIBC_TUNABLES="):
            pieces = [e[len("GLIBC_TUNABLES="):]]
            for p in entries[i + 1:]:
                if not p.startswith("glibc."): break
                pieces.append(p)
            return ":".join(pieces)
    return "<unset>"
parent = open("/proc/%d/environ" % os.getppid(), "rb").read().decode().split("\0")
with open(sys.argv[1], "w") as out:
    out.write(os.environ.get("GLIBC_TUNABLES", "<unset>") + "\n")
    out.write(("leaked" if any(k.startswith("PTADVISE_EARLIER") for k in os.environ) else "clean") + "\n")
    out.write(tunables(parent) + "\n")
)";

bool system_mode_is_madvise() {
  return read_file("/sys/kernel/mm/transparent_hugepage/enabled").find("[madvise]") != std::string::npos;
}

struct Seen {
  std::string child, marker, ptadvise;
};

// `env`: assignments for `env` (or -u NAME) before ptadvise.
Seen run_with(const std::string& env) {
  TempDir dir;
  const std::string script = dir.write("report_env.py", kReportEnvironment);
  const std::string seen = dir.file("seen.txt");
  ptadvise::testing::Run run = ptadvise::testing::run_shell(
      "env " + env + " '" PTADVISE_BINARY "' run --capture torch --out '" + dir.file("out") +
      "' -- /usr/bin/python3 '" + script + "' '" + seen + "'");
  std::istringstream lines(read_file(seen));
  Seen result;
  std::getline(lines, result.child);
  std::getline(lines, result.marker);
  std::getline(lines, result.ptadvise);
  INFO("ptadvise run: exit " << run.exit_code << ", stderr: " << run.err);
  REQUIRE(!result.marker.empty());
  return result;
}

}  // namespace

TEST_CASE("huge pages: ptadvise runs with malloc asking for huge pages; the program it runs gets the user's GLIBC_TUNABLES") {
  if (!ptadvise::testing::python_has("torch")) {
    MESSAGE("skipped: Debian's python3-torch is not installed (`ptadvise run --capture torch` needs it)");
    return;
  }
  bool restarts = system_mode_is_madvise();
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("the restart is not checked under AddressSanitizer, whose malloc is not glibc's");
  restarts = false;
#endif
  if (!restarts) MESSAGE("the restart is not checked: transparent huge pages are not in \"madvise\" mode here");

  const Seen user_set = run_with("GLIBC_TUNABLES=glibc.malloc.tcache_count=7");
  CHECK(user_set.child == "glibc.malloc.tcache_count=7");
  CHECK(user_set.marker == "clean");
  if (restarts) {
    CHECK(user_set.ptadvise == "glibc.malloc.tcache_count=7:glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1");
  }

  const Seen none = run_with("-u GLIBC_TUNABLES");
  CHECK(none.child == "<unset>");
  CHECK(none.marker == "clean");
  if (restarts) CHECK(none.ptadvise == "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1");

  // The user's choice wins: switched off, or values of their own.
  const Seen arenas = run_with("GLIBC_TUNABLES=glibc.malloc.arena_max=4");
  CHECK(arenas.child == "glibc.malloc.arena_max=4");
  if (restarts) CHECK(arenas.ptadvise == "glibc.malloc.arena_max=4:glibc.malloc.hugetlb=1");
  const Seen off = run_with("-u GLIBC_TUNABLES PTADVISE_HUGE_PAGES=0");
  CHECK(off.child == "<unset>");
  CHECK(off.ptadvise == "<unset>");
  const Seen own = run_with("GLIBC_TUNABLES=glibc.malloc.hugetlb=0");
  CHECK(own.child == "glibc.malloc.hugetlb=0");
  CHECK(own.ptadvise == "glibc.malloc.hugetlb=0");
}
