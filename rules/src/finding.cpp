#include "ptadvise/finding.h"

namespace ptadvise {

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "warning";
}

std::optional<Severity> parse_severity(std::string_view text) {
  if (text == "info") return Severity::Info;
  if (text == "warning") return Severity::Warning;
  if (text == "error") return Severity::Error;
  return std::nullopt;
}

std::string_view to_string(Confidence confidence) {
  switch (confidence) {
    case Confidence::Low: return "low";
    case Confidence::Medium: return "medium";
    case Confidence::High: return "high";
  }
  return "medium";
}

}  // namespace ptadvise
