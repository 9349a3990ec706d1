// Text and JSON renderings of a trace Summary (`ptadvise summary`; `check` embeds the JSON object as
// "summary"). Printers only format: every figure is computed by summarize() in trace/.
#pragma once

#include <string>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise {

// A readable, aligned block of a few lines for one trace, ending with a newline.
std::string summary_text(const Summary& summary);

// One JSON object (no trailing newline). `indent` spaces per level; 0 writes it on one line.
std::string summary_json(const Summary& summary, int indent = 2);

// Several traces (one per rank): a JSON array of summary_json objects.
std::string summaries_json(const std::vector<Summary>& summaries, int indent = 2);

}  // namespace ptadvise
