// How check shares the cores between the ranks it checks at once (check_ranks.h, loader_threads).
#include <doctest/doctest.h>

#include "check_ranks.h"
#include "ptadvise/cores.h"

using ptadvise::check_detail::loader_threads;

TEST_CASE("each rank's loader gets its share of the cores") {
  // One rank alone takes every core.
  CHECK(loader_threads(2, 1, 1, 1) == 2);
  CHECK(loader_threads(8, 8, 1, 1) == 8);
  // Two ranks on two cores: one parsing thread each, also for the second worker that starts first.
  CHECK(loader_threads(2, 2, 2, 1) == 1);
  CHECK(loader_threads(2, 2, 1, 2) == 1);
  // Eight cores, three workers, ten files: 8 / 3 each; the last file while two others still run: 8 / 2.
  CHECK(loader_threads(8, 3, 10, 1) == 2);
  CHECK(loader_threads(8, 3, 1, 2) == 4);
  // The last file once the others are done takes every core.
  CHECK(loader_threads(8, 3, 1, 1) == 8);
  // More ranks than cores: one thread each, never none.
  CHECK(loader_threads(2, 4, 4, 4) == 1);
  CHECK(loader_threads(1, 1, 1, 1) == 1);
}

TEST_CASE("the usable cores are at least one") { CHECK(ptadvise::usable_cores() >= 1); }
