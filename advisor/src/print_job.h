// Internal to advisor/: the job section of the text, Markdown and JSON reports (the per-rank table and the
// collectives with the largest arrival skew). The findings themselves are printed like any trace's.
#pragma once

#include <ostream>
#include <string>

#include "json_doc.h"
#include "ptadvise/advisor.h"

namespace ptadvise::job_print {

// Lines fit `width` columns (the table's columns are as wide as their widest cell).
void text(const JobTable& job, std::ostream& out, size_t width);
void markdown(const JobTable& job, std::ostream& out);
// The "job" object of the JSON report.
jsondoc::Json document(const JobTable& job);

}  // namespace ptadvise::job_print
