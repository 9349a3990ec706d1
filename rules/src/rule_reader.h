// Internal to rules/: reading a rule document (docs/RULE_LANGUAGE.md) with positions, and the names a rule
// may use. Every problem is one YamlReadError line naming the file, line, column and key.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptadvise/yaml_reader.h"
#include "quantity.h"
#include "rule_model.h"

namespace ptadvise::rule_loading {

// The scalar kinds of a rule document on top of YamlReader's strings.
class Reader : public YamlReader {
 public:
  using YamlReader::YamlReader;

  bool boolean(const YAML::Node& node, const std::string& key) const {
    std::string value = scalar(node, key);
    if (value == "true") return true;
    if (value == "false") return false;
    fail(node, key, "expected true or false, got '" + value + "'");
  }
  double number(const YAML::Node& node, const std::string& key) const {
    std::string value = scalar(node, key);
    auto parsed = parse_quantity(value, QuantityKind::Plain);
    if (!parsed) fail(node, key, "expected a number, got '" + value + "'");
    return *parsed;
  }
  int64_t duration_ns(const YAML::Node& node, const std::string& key) const {
    std::string value = scalar(node, key);
    auto parsed = parse_quantity(value, QuantityKind::Duration);
    if (!parsed || *parsed < 0) {
      fail(node, key, "expected a duration with a unit (ns, us, ms, s), got '" + value + "'");
    }
    // Beyond int64 nanoseconds the conversion would wrap to a negative duration that matches everything.
    if (*parsed > 4.6e18) fail(node, key, "duration out of range (at most 4.6e9 s), got '" + value + "'");
    return static_cast<int64_t>(std::llround(*parsed));
  }
  // A string or a list of strings.
  std::vector<std::string> strings(const YAML::Node& node, const std::string& key) const {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(text(node, key));
    } else if (node.IsSequence()) {
      if (node.size() == 0) fail(node, key, "expected a non-empty list");
      for (const auto& item : node) out.push_back(text(item, key));
    } else {
      fail(node, key, "expected a string or a list of strings");
    }
    return out;
  }
};

// Upper-case letters then digits, like PTA101.
bool is_rule_id(const std::string& id);
// Lower-case words joined by single '-'.
bool is_kebab(const std::string& name);
// Letters, digits and '_', not starting with a digit.
bool is_identifier(const std::string& name);
// Columns of UTF-8 text: one per code point (rule texts hold no wide characters).
size_t text_columns(std::string_view text);
// The event kinds and idle causes by the names rule files use.
const std::map<std::string, EventKind, std::less<>>& kind_names();
const std::map<std::string, IdleCause, std::less<>>& cause_names();
// Trace-level values every rule can use (docs/RULE_LANGUAGE.md "Built-in values").
const std::vector<std::pair<std::string, MetricUnit>>& builtin_values();

}  // namespace ptadvise::rule_loading
