// Where a finding points in the repository, and its one-line message, for the code-scanning formats
// (SARIF, GitHub annotations). Private to advisor/.
#pragma once

#include <string>
#include <utility>

#include "ptadvise/advisor.h"

namespace ptadvise {

// The finding's source line when the file is found below the source root, else the trace file at line 1.
std::pair<std::string, int> repo_location(const Report& report, const TraceReport& trace, const Finding& f);

// URI reference of a relative path: unreserved characters and '/' kept, the rest percent-encoded (RFC 3986).
std::string uri_reference(std::string_view path);

// "message (saves ~X ms per step, Y% of step time; confidence C). Fix: …"
std::string finding_message(const Finding& f);

}  // namespace ptadvise
