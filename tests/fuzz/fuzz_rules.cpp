// libFuzzer harness: arbitrary bytes as a rule file, read both as a trace rule and as a job rule
// (`scope: job`, with its keep_pace transform). Validation must turn every input into a rule set or a
// one-line error, never a crash, a hang or a leak.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "ptadvise/job.h"
#include "ptadvise/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto result = ptadvise::load_rule_text(text, "fuzz.yaml");
  if (auto* error = std::get_if<ptadvise::RuleError>(&result)) {
    if (error->message.empty() || error->message.find('\n') != std::string::npos) __builtin_trap();
  }
  auto job = ptadvise::load_job_rule_text(text, "fuzz.yaml");
  if (auto* error = std::get_if<ptadvise::JobRuleError>(&job)) {
    if (error->message.empty() || error->message.find('\n') != std::string::npos) __builtin_trap();
  }
  return 0;
}
