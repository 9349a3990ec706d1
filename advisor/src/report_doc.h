// The `check --format json` document, shared by the JSON printer and the HTML report (which embeds the
// very document the JSON printer writes: printers never analyse). Private to advisor/.
#pragma once

#include "json_doc.h"
#include "ptadvise/advisor.h"

namespace ptadvise {

jsondoc::Json report_document(const Report& report);

// One finding as it appears in `findings` of the report document; `report`/`trace` give the baseline
// state, failing flag and rule docs.
jsondoc::Json finding_document(const Report& report, const TraceReport& trace, size_t index);

}  // namespace ptadvise
