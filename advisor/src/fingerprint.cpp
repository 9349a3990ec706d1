#include "ptadvise/advisor.h"

#include <cstdint>
#include <cstdio>

namespace ptadvise {

namespace {
// FNV-1a 64: stable across platforms and releases, which std::hash is not.
uint64_t fnv1a(std::string_view text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}
}  // namespace

std::string fingerprint(const Finding& finding) {
  uint64_t h = fnv1a(finding.rule_id);
  h = fnv1a("\x1f" + finding.site.op, h);
  h = fnv1a("\x1f" + finding.site.kernel, h);
  for (const auto& op : finding.site.op_chain) h = fnv1a("\x1e" + op, h);
  if (finding.site.source) {
    h = fnv1a("\x1f" + finding.site.source->file, h);
    h = fnv1a("\x1f" + finding.site.source->function, h);
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace ptadvise
