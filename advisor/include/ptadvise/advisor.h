// From raw findings to advice: impact ranking, fingerprints, configuration, suppressions, baselines,
// and the printers (text, json, sarif, github, junit, markdown). Printers only format.
#pragma once

#include <string>
#include <vector>

#include "ptadvise/finding.h"

namespace ptadvise {

// Stable identity of a finding: rule id + normalised site; never timestamps, pids or durations.
std::string fingerprint(const Finding& finding);

}  // namespace ptadvise
