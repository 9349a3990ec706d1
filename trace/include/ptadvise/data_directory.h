// Where ptadvise's shipped data is: the rules (rules.d/), tables (data/), output schemas (schemas/) and the
// Python package (python/). Installed, that is <prefix>/share/ptadvise beside <prefix>/bin/ptadvise, so a
// moved or copied prefix keeps working; in a build tree, <build>/share/ptadvise holds links to the sources.
#pragma once

#include <string>
#include <string_view>

namespace ptadvise {

// $PTADVISE_DATA_DIR when set; else <dir of this executable>/../share/ptadvise when it exists; else, for
// an executable nested deeper in a build tree (tests/fuzz/...), <build root>/share/ptadvise of the nearest
// ancestor holding CMakeCache.txt. Empty when none is found.
std::string data_directory();

// data_directory()/relative, or empty when there is no data directory.
std::string data_path(std::string_view relative);

}  // namespace ptadvise
