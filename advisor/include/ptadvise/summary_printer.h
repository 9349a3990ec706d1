// Text and JSON renderings of a trace Summary (`ptadvise summary`; `check` embeds the JSON object as
// "summary"). Printers only format: every figure is computed by summarize() in trace/.
#pragma once

#include <string>
#include <vector>

#include "ptadvise/analysis.h"
#include "ptadvise/rules.h"

namespace ptadvise {

// A readable, aligned block of a few lines for one trace, ending with a newline. With `replay`, also the
// critical path of the replayed steps by category and its largest items (docs/WHATIF.md).
std::string summary_text(const Summary& summary, const StepPrediction* replay = nullptr);

// One JSON object (no trailing newline). `indent` spaces per level; 0 writes it on one line. With
// `replay`, a "critical_path" object.
std::string summary_json(const Summary& summary, int indent = 2, const StepPrediction* replay = nullptr);

// Several traces (one per rank): a JSON array of summary_json objects; `replays`, when given, one per summary.
std::string summaries_json(const std::vector<Summary>& summaries, int indent = 2,
                           const std::vector<StepPrediction>* replays = nullptr);

}  // namespace ptadvise
