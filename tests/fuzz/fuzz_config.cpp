// libFuzzer harness: arbitrary bytes as a configuration file and as a baseline. Each must become a value
// or a one-line error, never a crash, a hang (alias bombs) or a leak.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <variant>

#include "ptadvise/advisor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto config = ptadvise::parse_config(text, "fuzz.yaml", "/nonexistent");
  if (auto* parsed = std::get_if<ptadvise::Config>(&config)) {
    std::ostringstream out;
    ptadvise::print_config(*parsed, out);
  } else if (std::get<ptadvise::ConfigError>(config).message.empty()) {
    __builtin_trap();
  }
  auto baseline = ptadvise::parse_baseline(text, "fuzz-baseline.yaml");
  if (auto* parsed = std::get_if<ptadvise::Baseline>(&baseline)) {
    std::ostringstream out;
    ptadvise::write_baseline(*parsed, out);
  }
  return 0;
}
