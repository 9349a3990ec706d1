// Which rule files belong to the job scope (rules.d/job/): the per-trace loader leaves them to job/.
#include "ptadvise/rules.h"

namespace ptadvise {

bool is_job_rule(std::string_view yaml) {
  // A top-level `scope: job` line (the job rule loader validates the rest).
  size_t pos = 0;
  while (pos < yaml.size()) {
    size_t end = yaml.find('\n', pos);
    std::string_view line = yaml.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.starts_with("scope:")) {
      std::string_view value = line.substr(6);
      while (!value.empty() && (value.front() == ' ' || value.front() == '"' || value.front() == '\'')) value.remove_prefix(1);
      return value.starts_with("job");
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return false;
}


}  // namespace ptadvise
