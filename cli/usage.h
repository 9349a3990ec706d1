// Usage errors that say what went wrong and what was probably meant (`ptadvise chekc` -> `check`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace ptadvise::cli {

// The candidate closest to `word` by edit distance when it is close enough to be a typo, else empty.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

// "unknown command 'chekc' (did you mean `check`?)" for the first subcommand or option on the command
// line that `app` does not know, else empty.
std::string unknown_argument(CLI::App& app, int argc, const char* const* argv);

}  // namespace ptadvise::cli
