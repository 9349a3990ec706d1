// Internal to advisor/: the job section of the text, Markdown and JSON reports (the per-rank table and the
// collectives with the largest arrival skew). The findings themselves are printed like any trace's.
#pragma once

#include <ostream>
#include <string>

#include "ptadvise/advisor.h"

namespace ptadvise::job_print {

void text(const JobTable& job, std::ostream& out);
void markdown(const JobTable& job, std::ostream& out);
// A JSON object (no trailing comma or newline).
void json(const JobTable& job, std::ostream& out, const std::string& indent);

}  // namespace ptadvise::job_print
