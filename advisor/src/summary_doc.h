// The summary of one trace as a JSON document, for embedding in other documents (private to advisor/).
#pragma once

#include "json_doc.h"
#include "ptadvise/analysis.h"

namespace ptadvise {
jsondoc::Json summary_document(const Summary& summary);
}  // namespace ptadvise
