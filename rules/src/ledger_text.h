// Internal to rules/: reading the idle ledger for selections and messages (which host events it charges,
// and what a set of its gaps was charged to), kept apart from the evaluator's control flow.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptadvise/analysis.h"

namespace ptadvise {

// Per event: 1 when the ledger charges it as the culprit of idle time, of one of `causes` (bits of
// 1 << IdleCause), in a steady-state step. What `charged_idle:` selects.
std::vector<uint8_t> charged_culprits(const Analysis& analysis, uint32_t causes);

// "aten::div 1.20 ms/step, aten::to 0.40 ms/step": the culprits (by name) of `gaps`, largest first, at
// most `top` of them; "none" without any. `{idle_culprits}` in a message.
std::string culprit_breakdown(const Analysis& analysis, const std::vector<uint32_t>& gaps, double steps, size_t top,
                              std::string (*format)(double));

// Whether the trace's CPU ops carry Python stacks (`Call stack` args, with_stack=True without the Python
// tracer's frames); the first ops tell.
bool has_call_stacks(const Timeline& timeline);

}  // namespace ptadvise
