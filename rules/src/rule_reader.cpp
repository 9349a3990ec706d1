// The names a rule file may use (rule_reader.h).
#include <algorithm>
#include <cctype>

#include "rule_reader.h"

namespace ptadvise::rule_loading {

bool is_rule_id(const std::string& id) {
  size_t letters = 0;
  while (letters < id.size() && std::isupper(static_cast<unsigned char>(id[letters]))) ++letters;
  if (letters == 0 || letters == id.size()) return false;
  return std::all_of(id.begin() + static_cast<std::ptrdiff_t>(letters), id.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// Columns of UTF-8 text: one per code point (rule texts hold no wide characters).
size_t text_columns(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

bool is_kebab(const std::string& name) {
  if (name.empty() || name.front() == '-' || name.back() == '-') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && name[i - 1] != '-');
    if (!ok) return false;
  }
  return true;
}

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

const std::map<std::string, EventKind, std::less<>>& kind_names() {
  static const std::map<std::string, EventKind, std::less<>> names = {
      {"cpu_op", EventKind::CpuOp},          {"user_annotation", EventKind::UserAnnotation},
      {"python_function", EventKind::PythonFunction}, {"runtime", EventKind::Runtime},
      {"driver", EventKind::Driver},         {"kernel", EventKind::Kernel},
      {"memcpy", EventKind::Memcpy},         {"memset", EventKind::Memset},
      {"sync", EventKind::Sync},             {"gpu_annotation", EventKind::GpuAnnotation},
      {"collective", EventKind::Collective}, {"memory", EventKind::MemoryInstant},
      {"instant", EventKind::Instant},       {"other", EventKind::Other},
  };
  return names;
}

const std::map<std::string, IdleCause, std::less<>>& cause_names() {
  static const std::map<std::string, IdleCause, std::less<>> names = {
      {"sync", IdleCause::Sync},
      {"data-loader", IdleCause::DataLoader},
      {"launch-bound", IdleCause::LaunchBound},
      {"cpu-work", IdleCause::CpuWork},
      {"untraced", IdleCause::Untraced},
      {"graph-capture", IdleCause::GraphCapture},
      {"external-wait", IdleCause::ExternalWait},
      {"warm-up", IdleCause::WarmUp},
  };
  return names;
}

// Trace-level values every rule can use (docs/RULE_LANGUAGE.md "Built-in values").
const std::vector<std::pair<std::string, MetricUnit>>& builtin_values() {
  static const std::vector<std::pair<std::string, MetricUnit>> values = {
      {"steps", MetricUnit::Count},           {"median_step_ms", MetricUnit::Value},
      {"max_step_ms", MetricUnit::Value},     {"first_step_ms", MetricUnit::Value},
      {"step_period_ms", MetricUnit::Value},  {"warmup_steps", MetricUnit::Count},
      {"warmup_ms", MetricUnit::Value},
      {"gpu_busy_pct", MetricUnit::Percent},  {"has_gpu", MetricUnit::Value},
      {"compute_capability", MetricUnit::Value}, {"gpu_memory_bytes", MetricUnit::Bytes},
  };
  return values;
}

}  // namespace ptadvise::rule_loading
