// What-if figures as JSON and text lines, shared by the check, summary and whatif printers.
#pragma once

#include <string>
#include <vector>

#include "json_doc.h"
#include "ptadvise/rules.h"

namespace ptadvise::format {

// The "whatif" object: measured, replayed and predicted step, the critical path before and after the fixes.
jsondoc::Json whatif_document(const StepPrediction& prediction);

// "predicted step after all fixes: 4.067 ms (-57.5%) ..." and, when the replay is off by more than 3%, why.
std::vector<std::string> whatif_headline(const StepPrediction& prediction);

// The critical path as trace events: one X event per piece on tid 0 of `pid`, named "critical path (replay)".
std::vector<jsondoc::Json> critical_path_events(const StepPrediction& prediction, int64_t pid);

// The unchanged replay's critical path for `summary`: which steps were replayed, ms and share per
// category, the largest items ({"available": false} without steady steps).
jsondoc::Json critical_path_document(const StepPrediction& prediction);

// The same as text lines: the shares, then the three largest items.
std::vector<std::string> critical_path_lines(const StepPrediction& prediction);

// "compute 41.2%, host 30.1%, ..." (categories with time, largest first).
std::string critical_shares(const std::array<double, whatif::kCategoryCount>& ms);

}  // namespace ptadvise::format
