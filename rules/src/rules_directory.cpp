#include <cstdlib>

#include "ptadvise/data_directory.h"
#include "ptadvise/rules.h"

namespace ptadvise {

std::string default_rules_directory() {
  if (const char* configured = std::getenv("PTADVISE_RULES_DIR"); configured != nullptr && *configured != '\0') {
    return configured;
  }
  std::string shipped = data_path("rules.d");
  // No data directory at all: name where it was expected, so the error says what is missing.
  return shipped.empty() ? "share/ptadvise/rules.d (beside the ptadvise executable)" : shipped;
}

}  // namespace ptadvise
