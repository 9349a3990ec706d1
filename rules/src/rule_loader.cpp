// Loading and validating rule files (docs/RULE_LANGUAGE.md). Every problem becomes one RuleError line
// naming the file, line, column and key; nothing here ever aborts on bad input.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ptadvise/yaml_budget.h"
#include "quantity.h"
#include "rule_model.h"

namespace ptadvise {

namespace {

namespace fs = std::filesystem;

struct Failure {
  std::string message;
};

// Walks one YAML document and reports problems with their position.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& what) const {
    fail_at(node.Mark(), key, what);
  }
  [[noreturn]] void fail_at(const YAML::Mark& mark, const std::string& key, const std::string& what) const {
    std::ostringstream out;
    out << file_;
    if (!mark.is_null()) out << ':' << mark.line + 1 << ':' << mark.column + 1;
    out << ": " << key << ": " << what;
    // One line, whatever the rule file contained: quoted values may hold newlines or control characters.
    std::string message;
    for (char c : out.str()) {
      if (c == '\n') message += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) message += '?';
      else message += c;
    }
    throw Failure{message};
  }

  // Checks a map's keys against the allowed ones; returns the map.
  void expect_map(const YAML::Node& node, const std::string& key, std::initializer_list<std::string_view> allowed) const {
    if (!node.IsMap()) fail(node, key, "expected a mapping");
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) fail(it->first, key, "expected a plain key");
      const std::string& name = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(it->first, join(key, name), "unknown key; expected one of " + list);
      }
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key, "expected a string");
    return node.Scalar();
  }
  std::string text(const YAML::Node& node, const std::string& key) const {
    std::string value = scalar(node, key);
    if (value.find_first_not_of(" \t\r\n") == std::string::npos) fail(node, key, "expected a non-empty string");
    return value;
  }
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

  static std::string join(const std::string& parent, const std::string& child) {
    return parent.empty() ? child : parent + "." + child;
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

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

class RuleCompiler {
 public:
  RuleCompiler(const Reader& reader, const YAML::Node& root) : r_(reader), root_(root) {}

  void compile(RuleInfo& info, CompiledRule& rule) {
    r_.expect_map(root_, "",
                  {"id", "name", "severity", "tags", "summary", "fix", "docs", "order", "thresholds", "select",
                   "group", "metrics", "when", "message", "short_message", "short_fix", "saving", "tests", "transform"});
    for (const char* required : {"id", "name", "severity", "tags", "summary", "fix", "docs", "select", "message",
                                 "saving"}) {
      if (!root_[required]) r_.fail(root_, required, "missing required key");
    }
    info.file = r_.file();
    info.id = r_.text(root_["id"], "id");
    if (!is_rule_id(info.id)) r_.fail(root_["id"], "id", "expected upper-case letters then digits, like PTA101");
    info.name = r_.text(root_["name"], "name");
    if (!is_kebab(info.name)) {
      r_.fail(root_["name"], "name", "expected lower-case words joined by '-', like sync-in-step");
    }
    std::string severity = r_.scalar(root_["severity"], "severity");
    auto parsed_severity = parse_severity(severity);
    if (!parsed_severity) r_.fail(root_["severity"], "severity", "expected info, warning or error, got '" + severity + "'");
    info.severity = *parsed_severity;
    if (!root_["tags"].IsSequence()) r_.fail(root_["tags"], "tags", "expected a non-empty list of tags");
    info.tags = r_.strings(root_["tags"], "tags");
    for (size_t i = 0; i < info.tags.size(); ++i) {
      if (!is_kebab(info.tags[i])) r_.fail(root_["tags"][i], "tags", "expected lower-case words joined by '-'");
    }
    info.summary = r_.text(root_["summary"], "summary");
    info.fix = r_.text(root_["fix"], "fix");
    if (auto short_fix = root_["short_fix"]) {
      info.short_fix = r_.text(short_fix, "short_fix");
      if (text_columns(info.short_fix) > kShortFixColumns) {
        r_.fail(short_fix, "short_fix",
                "expected at most " + std::to_string(kShortFixColumns) + " characters (it is one line of the text report), got " +
                    std::to_string(text_columns(info.short_fix)));
      }
    }
    compile_docs(info.docs);
    if (auto order = root_["order"]) {
      std::string value = r_.scalar(order, "order");
      if (value != "first" && value != "normal" && value != "last") {
        r_.fail(order, "order", "expected first, normal or last, got '" + value + "'");
      }
      rule.order_first = value == "first";
      rule.order_last = value == "last";
    }

    compile_thresholds(rule);
    add_noise_floor(rule);
    compile_selections(rule);
    compile_group(rule);
    declare_metrics(rule);
    resolve_metrics(rule);
    if (auto when = root_["when"]) rule.when = compile_condition(rule, when, "when");
    rule.message = compile_template(rule, root_["message"], "message");
    if (auto short_message = root_["short_message"]) rule.short_message = compile_template(rule, short_message, "short_message");
    compile_saving(rule);
    if (auto transform = root_["transform"]) {
      if (auto error = parse_transform(transform, rule.transform)) r_.fail_at(error->mark, error->key, error->what);
      for (const std::string& name : rule.transform.selections) {
        if (!name.empty() && std::none_of(rule.selections.begin(), rule.selections.end(),
                                          [&name](const Selection& s) { return s.name == name; })) {
          r_.fail(transform, "transform.apply.select", "no selection named '" + name + "'");
        }
      }
    }
    compile_tests(rule);

    for (const auto& threshold : rule.thresholds) {
      info.thresholds.push_back({threshold.name, threshold.value, threshold.unit, threshold.doc});
    }
    info.saving_method = rule.saving_method;
    info.transform = describe_transform(rule.transform);
    info.transform_method = rule.transform.method;
    info.needs = needs_of(rule);
  }

  // What a trace must hold for the rule to check anything (RuleNeed).
  static uint8_t needs_of(const CompiledRule& rule) {
    constexpr uint32_t kGpuKinds = (1u << static_cast<unsigned>(EventKind::Kernel)) |
                                   (1u << static_cast<unsigned>(EventKind::Memcpy)) |
                                   (1u << static_cast<unsigned>(EventKind::Memset)) |
                                   (1u << static_cast<unsigned>(EventKind::Sync)) |
                                   (1u << static_cast<unsigned>(EventKind::GpuAnnotation));
    constexpr uint32_t kPython = 1u << static_cast<unsigned>(EventKind::PythonFunction);
    uint8_t needs = 0;
    // The kinds a selection can yield, through unions.
    std::function<uint32_t(size_t)> kinds_of = [&](size_t s) -> uint32_t {
      const Selection& selection = rule.selections[s];
      if (selection.union_of.empty()) return selection.kinds == 0 ? ~0u : selection.kinds;
      uint32_t kinds = 0;
      for (size_t member : selection.union_of) kinds |= kinds_of(member);
      return kinds;
    };
    if (!rule.selections.empty() && (kinds_of(rule.primary) & ~kGpuKinds) == 0) needs |= kNeedsGpu;
    // Every built-in value is declared in every rule: only the metrics the rule uses count.
    std::vector<uint8_t> used(rule.metrics.size(), 0);
    std::function<void(size_t)> use = [&](size_t m) {
      if (m >= used.size() || used[m]) return;
      used[m] = 1;
      for (size_t operand : rule.metrics[m].operands) use(operand);
    };
    std::function<void(const Condition&)> use_condition = [&](const Condition& c) {
      if (c.kind == Condition::Kind::Compare || c.kind == Condition::Kind::Truthy) {
        use(c.left);
        if (c.kind == Condition::Kind::Compare) use(c.right);
      }
      for (const Condition& child : c.children) use_condition(child);
    };
    if (rule.when) use_condition(*rule.when);
    for (const SavingTerm& term : rule.saving) {
      use(term.metric);
      if (term.when) use_condition(*term.when);
    }
    for (const Template* message : {&rule.message, &rule.short_message}) {
      for (const TemplatePart& part : *message) {
        if (part.kind == TemplatePart::Kind::Metric) use(part.metric);
      }
    }
    bool idle = false, cpu_fallback = false;
    for (size_t m = 0; m < rule.metrics.size(); ++m) {
      if (!used[m]) continue;
      const Metric& metric = rule.metrics[m];
      idle = idle || metric.kind == MetricKind::Idle;
      if (metric.kind == MetricKind::Builtin) {
        if (metric.builtin == "has_gpu") cpu_fallback = true;
        if (metric.builtin == "compute_capability" || metric.builtin == "gpu_memory_bytes") {
          needs |= kNeedsDeviceProperties;
        }
      }
    }
    if (idle && !cpu_fallback) needs |= kNeedsGpu;
    for (const Selection& selection : rule.selections) {
      if (selection.kinds == kPython) needs |= kNeedsStacks;
    }
    return needs;
  }

 private:
  void compile_docs(RuleDocs& docs) {
    const YAML::Node node = root_["docs"];
    r_.expect_map(node, "docs", {"what", "why", "example", "fix"});
    for (const char* section : {"what", "why", "example", "fix"}) {
      if (!node[section]) r_.fail(node, std::string("docs.") + section, "missing required section");
    }
    docs.what = r_.text(node["what"], "docs.what");
    docs.why = r_.text(node["why"], "docs.why");
    docs.example = r_.text(node["example"], "docs.example");
    docs.fix = r_.text(node["fix"], "docs.fix");
  }

  void compile_thresholds(CompiledRule& rule) {
    const YAML::Node node = root_["thresholds"];
    if (!node) return;
    if (!node.IsMap()) r_.fail(node, "thresholds", "expected a mapping of threshold name to {value, unit, doc}");
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string name = r_.scalar(it->first, "thresholds");
      std::string key = "thresholds." + name;
      if (!is_identifier(name)) r_.fail(it->first, key, "expected a name of letters, digits and '_'");
      r_.expect_map(it->second, key, {"value", "unit", "doc"});
      if (!it->second["value"]) r_.fail(it->second, key + ".value", "missing required key");
      if (!it->second["doc"]) r_.fail(it->second, key + ".doc", "missing required key (why this value)");
      Threshold threshold;
      threshold.name = name;
      threshold.value = r_.number(it->second["value"], key + ".value");
      if (it->second["unit"]) threshold.unit = r_.text(it->second["unit"], key + ".unit");
      threshold.doc = r_.text(it->second["doc"], key + ".doc");
      declare_name(it->first, key, name);
      rule.thresholds.push_back(std::move(threshold));
    }
  }

  // The noise floor every rule with a saving has (docs/RULE_LANGUAGE.md "Noise floor"); a rule file may
  // set its own values under the same names, and a configuration may override them like any threshold.
  static void add_noise_floor(CompiledRule& rule) {
    auto declared = [&rule](const char* name) {
      return std::any_of(rule.thresholds.begin(), rule.thresholds.end(),
                         [name](const Threshold& t) { return t.name == name; });
    };
    if (!declared(kMinSavingMs)) {
      rule.thresholds.push_back({kMinSavingMs, kDefaultMinSavingMs, "ms per step",
                                 "Noise floor: a finding must save at least this much per step (default for every "
                                 "rule with a saving)."});
    }
    if (!declared(kMinSavingPct)) {
      rule.thresholds.push_back({kMinSavingPct, kDefaultMinSavingPct, "% of step",
                                 "Noise floor: and at least this share of the step period (default for every rule "
                                 "with a saving)."});
    }
  }

  NameMatcher compile_names(const YAML::Node& node, const std::string& key) {
    NameMatcher matcher;
    if (node.IsMap()) {
      r_.expect_map(node, key, {"glob", "regex"});
      if (auto globs = node["glob"]) {
        for (auto& g : r_.strings(globs, key + ".glob")) matcher.add_glob(g);
      }
      if (auto regexes = node["regex"]) {
        std::vector<std::string> patterns = r_.strings(regexes, key + ".regex");
        for (size_t i = 0; i < patterns.size(); ++i) {
          std::string error = matcher.add_regex(patterns[i]);
          if (!error.empty()) {
            const YAML::Node at = regexes.IsSequence() ? regexes[i] : regexes;
            r_.fail(at, key + ".regex", "invalid regular expression '" + patterns[i] + "': " + error);
          }
        }
      }
      if (matcher.empty()) r_.fail(node, key, "expected glob and/or regex patterns");
    } else {
      for (auto& g : r_.strings(node, key)) matcher.add_glob(g);
    }
    return matcher;
  }

  void compile_selections(CompiledRule& rule) {
    const YAML::Node node = root_["select"];
    if (!node.IsMap() || node.size() == 0) r_.fail(node, "select", "expected a mapping of selection name to selector");
    // Register names first so selectors may refer to selections defined after them.
    std::vector<std::pair<YAML::Node, YAML::Node>> entries;
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string name = r_.scalar(it->first, "select");
      if (!is_identifier(name)) r_.fail(it->first, "select." + name, "expected a name of letters, digits and '_'");
      if (selection_index_.count(name)) r_.fail(it->first, "select." + name, "duplicate selection name");
      selection_index_[name] = entries.size();
      entries.emplace_back(it->first, it->second);
    }
    std::vector<Selection> unordered(entries.size());
    std::vector<std::vector<size_t>> depends(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      unordered[i] = compile_selector(entries[i].second, "select." + entries[i].first.Scalar(), depends[i]);
      unordered[i].name = entries[i].first.Scalar();
    }
    // Topological order: a selection is evaluated after the ones its sequence predicates use.
    std::vector<int> state(entries.size(), 0);
    std::vector<size_t> order;
    std::function<void(size_t)> visit = [&](size_t i) {
      if (state[i] == 2) return;
      if (state[i] == 1) r_.fail(entries[i].first, "select." + entries[i].first.Scalar(), "selections refer to each other in a cycle");
      state[i] = 1;
      for (size_t d : depends[i]) visit(d);
      state[i] = 2;
      order.push_back(i);
    };
    for (size_t i = 0; i < entries.size(); ++i) visit(i);
    std::vector<size_t> position(entries.size());
    for (size_t p = 0; p < order.size(); ++p) position[order[p]] = p;
    for (size_t p = 0; p < order.size(); ++p) {
      Selection selection = std::move(unordered[order[p]]);
      for (auto& sequence : selection.sequences) sequence.selection = position[sequence.selection];
      for (auto& part : selection.union_of) part = position[part];
      rule.selections.push_back(std::move(selection));
    }
    for (auto& [name, index] : selection_index_) index = position[index];
    rule.primary = selection_index_.at(entries[0].first.Scalar());
  }

  // `family:` / `exclude_family:` (docs/KERNEL_FAMILIES.md): kernel families select kernel events only.
  void compile_families(const YAML::Node& node, const std::string& key, Selection& selection) {
    for (const char* field : {"family", "exclude_family"}) {
      const YAML::Node n = node[field];
      if (!n) continue;
      const std::string field_key = key + "." + field;
      std::vector<std::string> names = r_.strings(n, field_key);
      for (size_t i = 0; i < names.size(); ++i) {
        auto family = parse_kernel_family(names[i]);
        if (!family) {
          std::string list;
          for (size_t f = 0; f < kKernelFamilyCount; ++f) {
            list += (list.empty() ? "" : ", ") + std::string(to_string(static_cast<KernelFamily>(f)));
          }
          r_.fail(n.IsSequence() ? n[i] : n, field_key, "unknown kernel family '" + names[i] + "'; expected one of " + list);
        }
        (field == std::string_view("family") ? selection.families : selection.exclude_families) |=
            1u << static_cast<unsigned>(*family);
      }
    }
    const uint32_t kernel = 1u << static_cast<unsigned>(EventKind::Kernel);
    if (selection.kinds == 0) selection.kinds = kernel;
    if (selection.kinds != kernel) {
      r_.fail(node["kind"], key + ".kind", "a selection by kernel family selects kernels; expected `kind: kernel`");
    }
  }

  Selection compile_selector(const YAML::Node& node, const std::string& key, std::vector<size_t>& depends) {
    r_.expect_map(node, key,
                  {"kind", "name", "exclude_name", "family", "exclude_family", "inside", "not_inside", "min_dur", "max_dur", "in_step",
                   "after_first_step", "in_warmup", "waits_for_gpu", "charged_idle", "args", "followed_by", "not_followed_by", "preceded_by", "not_preceded_by",
                   "contains", "not_contains", "union"});
    Selection selection;
    if (auto parts = node["union"]) {
      if (node.size() != 1) r_.fail(node, key + ".union", "a union takes no other selector keys");
      if (!parts.IsSequence() || parts.size() < 2) r_.fail(parts, key + ".union", "expected a list of two or more selection names");
      for (const auto& part : parts) {
        std::string name = r_.scalar(part, key + ".union");
        auto found = selection_index_.find(name);
        if (found == selection_index_.end()) r_.fail(part, key + ".union", "unknown selection '" + name + "'");
        selection.union_of.push_back(found->second);
        depends.push_back(found->second);
      }
      return selection;
    }
    if (auto kinds = node["kind"]) {
      std::vector<std::string> names = r_.strings(kinds, key + ".kind");
      for (size_t i = 0; i < names.size(); ++i) {
        auto found = kind_names().find(names[i]);
        if (found == kind_names().end()) {
          std::string list;
          for (auto& [k, v] : kind_names()) list += (list.empty() ? "" : ", ") + k;
          r_.fail(kinds.IsSequence() ? kinds[i] : kinds, key + ".kind",
                  "unknown event kind '" + names[i] + "'; expected one of " + list);
        }
        selection.kinds |= 1u << static_cast<unsigned>(found->second);
      }
    }
    if (auto n = node["name"]) selection.name_match = compile_names(n, key + ".name");
    if (auto n = node["exclude_name"]) selection.name_exclude = compile_names(n, key + ".exclude_name");
    if (node["family"] || node["exclude_family"]) compile_families(node, key, selection);
    if (auto n = node["inside"]) selection.inside = compile_names(n, key + ".inside");
    if (auto n = node["not_inside"]) selection.not_inside = compile_names(n, key + ".not_inside");
    if (auto n = node["min_dur"]) selection.min_dur_ns = r_.duration_ns(n, key + ".min_dur");
    if (auto n = node["max_dur"]) selection.max_dur_ns = r_.duration_ns(n, key + ".max_dur");
    if (auto n = node["in_step"]) selection.in_step = r_.boolean(n, key + ".in_step");
    if (auto n = node["after_first_step"]) selection.after_first_step = r_.boolean(n, key + ".after_first_step");
    if (auto n = node["in_warmup"]) selection.in_warmup = r_.boolean(n, key + ".in_warmup");
    if (auto n = node["waits_for_gpu"]) selection.waits_for_gpu = r_.boolean(n, key + ".waits_for_gpu");
    if (auto n = node["charged_idle"]) selection.charged_idle = compile_causes(n, key + ".charged_idle");
    if (auto n = node["args"]) {
      if (!n.IsSequence()) r_.fail(n, key + ".args", "expected a list of predicates like {key: bytes, ge: 1MiB}");
      for (const auto& item : n) selection.args.push_back(compile_arg(item, key + ".args"));
    }
    const std::pair<const char*, std::pair<SequenceKind, bool>> sequences[] = {
        {"followed_by", {SequenceKind::FollowedBy, false}}, {"not_followed_by", {SequenceKind::FollowedBy, true}},
        {"preceded_by", {SequenceKind::PrecededBy, false}}, {"not_preceded_by", {SequenceKind::PrecededBy, true}},
        {"contains", {SequenceKind::Contains, false}},      {"not_contains", {SequenceKind::Contains, true}}};
    for (const auto& [field, spec] : sequences) {
      const YAML::Node n = node[field];
      if (!n) continue;
      std::string field_key = key + "." + field;
      SequencePredicate sequence;
      sequence.kind = spec.first;
      sequence.negate = spec.second;
      YAML::Node target = n;
      if (n.IsMap()) {
        r_.expect_map(n, field_key, {"select", "within"});
        if (!n["select"]) r_.fail(n, field_key + ".select", "missing required key");
        target.reset(n["select"]);  // reset, not operator=: that would overwrite n itself
        if (auto within = n["within"]) {
          if (sequence.kind == SequenceKind::Contains) r_.fail(within, field_key + ".within", "not used by contains");
          if (within.IsScalar() && within.Scalar() == "step") {
            sequence.within_step = true;
          } else {
            sequence.within_ns = r_.duration_ns(within, field_key + ".within");
          }
        }
      }
      if (sequence.kind != SequenceKind::Contains && !(n.IsMap() && n["within"])) {
        r_.fail(n, field_key, "expected {select: NAME, within: DURATION or step}");
      }
      std::string target_name = r_.scalar(target, field_key + ".select");
      auto found = selection_index_.find(target_name);
      if (found == selection_index_.end()) r_.fail(target, field_key + ".select", "unknown selection '" + target_name + "'");
      sequence.selection = found->second;
      depends.push_back(found->second);
      selection.sequences.push_back(sequence);
    }
    return selection;
  }

  ArgPredicate compile_arg(const YAML::Node& node, const std::string& key) {
    r_.expect_map(node, key,
                  {"key", "exists", "missing", "nonempty", "eq", "ne", "lt", "le", "gt", "ge", "contains", "glob",
                   "dim_not_multiple_of"});
    if (!node["key"]) r_.fail(node, key + ".key", "missing required key");
    ArgPredicate predicate;
    std::string path = r_.text(node["key"], key + ".key");
    // `Input Dims[2]` addresses one element of an array value.
    if (path.size() > 3 && path.back() == ']') {
      size_t open = path.rfind('[');
      int index = -1;
      if (open != std::string::npos) {
        auto [end, ec] = std::from_chars(path.data() + open + 1, path.data() + path.size() - 1, index);
        if (ec != std::errc() || end != path.data() + path.size() - 1 || index < 0) {
          r_.fail(node["key"], key + ".key", "expected KEY or KEY[INDEX], got '" + path + "'");
        }
        predicate.index = index;
        path = path.substr(0, open);
      }
    }
    predicate.key = path;
    int operators = 0;
    const std::pair<const char*, ArgOp> ops[] = {
        {"exists", ArgOp::Exists}, {"missing", ArgOp::Missing}, {"nonempty", ArgOp::NonEmpty}, {"eq", ArgOp::Eq},
        {"ne", ArgOp::Ne},         {"lt", ArgOp::Lt},           {"le", ArgOp::Le},             {"gt", ArgOp::Gt},
        {"ge", ArgOp::Ge},         {"contains", ArgOp::Contains}, {"glob", ArgOp::Glob},
        {"dim_not_multiple_of", ArgOp::DimNotMultipleOf}};
    for (const auto& [field, op] : ops) {
      const YAML::Node value = node[field];
      if (!value) continue;
      ++operators;
      predicate.op = op;
      std::string field_key = key + "." + field;
      switch (op) {
        case ArgOp::Exists:
        case ArgOp::Missing:
        case ArgOp::NonEmpty:
          if (!r_.boolean(value, field_key)) r_.fail(value, field_key, "only 'true' is meaningful here");
          break;
        case ArgOp::Lt: case ArgOp::Le: case ArgOp::Gt: case ArgOp::Ge: {
          std::string text = r_.scalar(value, field_key);
          auto parsed = parse_quantity(text, QuantityKind::Any);
          if (!parsed) r_.fail(value, field_key, "expected a number (units B, KiB, MiB, GiB, KB, MB, GB allowed), got '" + text + "'");
          predicate.number = *parsed;
          break;
        }
        case ArgOp::DimNotMultipleOf: {
          predicate.number = r_.number(value, field_key);
          if (predicate.number < 1 || predicate.number > 1e15 || predicate.number != std::floor(predicate.number)) {
            r_.fail(value, field_key, "expected a positive integer");
          }
          break;
        }
        case ArgOp::Eq: case ArgOp::Ne: {
          std::string text = r_.scalar(value, field_key);
          auto parsed = parse_quantity(text, QuantityKind::Any);
          predicate.text = text;
          if (parsed) {
            predicate.number = *parsed;
            predicate.numeric = true;
          }
          break;
        }
        case ArgOp::Contains:
        case ArgOp::Glob:
          predicate.text = r_.text(value, field_key);
          break;
      }
    }
    if (operators != 1) r_.fail(node, key, "expected exactly one comparison (exists, eq, ge, contains, ...)");
    return predicate;
  }

  void compile_group(CompiledRule& rule) {
    const YAML::Node node = root_["group"];
    if (!node) return;
    r_.expect_map(node, "group", {"select", "by"});
    if (auto select = node["select"]) {
      std::string name = r_.scalar(select, "group.select");
      auto found = selection_index_.find(name);
      if (found == selection_index_.end()) r_.fail(select, "group.select", "unknown selection '" + name + "'");
      rule.primary = found->second;
    }
    if (auto by = node["by"]) {
      static const std::map<std::string, SiteKey, std::less<>> keys = {
          {"op", SiteKey::Op},         {"op_chain", SiteKey::OpChain}, {"kernel", SiteKey::Kernel},
          {"name", SiteKey::Name},     {"source", SiteKey::Source},    {"bytes", SiteKey::Bytes}};
      if (!by.IsSequence()) r_.fail(by, "group.by", "expected a list of site keys (op, op_chain, kernel, name, source, bytes)");
      for (const auto& item : by) {
        std::string key = r_.scalar(item, "group.by");
        auto found = keys.find(key);
        if (found == keys.end()) {
          r_.fail(item, "group.by", "unknown site key '" + key + "'; expected op, op_chain, kernel, name, source or bytes");
        }
        rule.group_by.push_back(found->second);
      }
    }
  }

  void declare_name(const YAML::Node& at, const std::string& key, const std::string& name) {
    if (names_.count(name)) r_.fail(at, key, "'" + name + "' is already defined (metric, threshold and built-in names share one namespace)");
    names_.insert(name);
  }

  size_t add_metric(CompiledRule& rule, Metric metric) {
    metric_index_[metric.name] = rule.metrics.size();
    rule.metrics.push_back(std::move(metric));
    return rule.metrics.size() - 1;
  }

  // Registers built-ins, thresholds, the primary selection's site metrics and the rule's own metrics;
  // operands are resolved afterwards so metrics may use each other in any order.
  void declare_metrics(CompiledRule& rule) {
    for (const auto& [name, unit] : builtin_values()) {
      Metric metric;
      metric.name = name;
      metric.kind = MetricKind::Builtin;
      metric.unit = unit;
      metric.builtin = name;
      names_.insert(name);
      add_metric(rule, std::move(metric));
    }
    for (size_t i = 0; i < rule.thresholds.size(); ++i) {
      Metric metric;
      metric.name = rule.thresholds[i].name;
      metric.kind = MetricKind::Threshold;
      metric.unit = MetricUnit::Value;
      metric.threshold = i;
      add_metric(rule, std::move(metric));
    }
    const std::pair<const char*, std::pair<MetricKind, MetricUnit>> site_metrics[] = {
        {"count", {MetricKind::Count, MetricUnit::Count}},
        {"time_ms", {MetricKind::Time, MetricUnit::Ms}},
        {"max_ms", {MetricKind::Max, MetricUnit::Value}},
        {"bytes", {MetricKind::Bytes, MetricUnit::Bytes}},
        {"steps_present_pct", {MetricKind::StepsPresent, MetricUnit::Percent}},
        {"share_pct", {MetricKind::ShareOfStep, MetricUnit::Percent}},
    };
    for (const auto& [name, spec] : site_metrics) {
      Metric metric;
      metric.name = name;
      metric.kind = spec.first;
      metric.unit = spec.second;
      metric.selection = rule.primary;
      metric.site_scoped = true;
      if (names_.count(name)) r_.fail(root_["thresholds"], "thresholds." + std::string(name), "'" + std::string(name) + "' is a built-in name");
      names_.insert(name);
      add_metric(rule, std::move(metric));
    }
    const YAML::Node node = root_["metrics"];
    if (!node) return;
    if (!node.IsMap()) r_.fail(node, "metrics", "expected a mapping of metric name to definition");
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string name = r_.scalar(it->first, "metrics");
      std::string key = "metrics." + name;
      if (!is_identifier(name)) r_.fail(it->first, key, "expected a name of letters, digits and '_'");
      declare_name(it->first, key, name);
      Metric metric;
      metric.name = name;
      pending_.push_back({it->first, it->second, add_metric(rule, std::move(metric))});
    }
  }

  size_t selection_operand(const YAML::Node& node, const std::string& key) {
    std::string name = r_.scalar(node, key);
    auto found = selection_index_.find(name);
    if (found == selection_index_.end()) r_.fail(node, key, "unknown selection '" + name + "'");
    return found->second;
  }

  size_t metric_operand(const YAML::Node& node, const std::string& key) {
    std::string name = r_.scalar(node, key);
    auto found = metric_index_.find(name);
    if (found == metric_index_.end()) r_.fail(node, key, "unknown metric '" + name + "'");
    return found->second;
  }

  void resolve_metrics(CompiledRule& rule) {
    for (auto& [key_node, definition, index] : pending_) {
      std::string key = "metrics." + key_node.Scalar();
      if (!definition.IsMap() || definition.size() != 1) {
        r_.fail(definition, key, "expected one of {count|time|max|bytes|steps_present|share_of_step: SELECTION}, "
                                 "{max_arg: {select, key}}, {idle: {...}}, {ratio: [A, B]}, {sum: [A, ...]}");
      }
      r_.expect_map(definition, key,
                    {"count", "time", "max", "bytes", "steps_present", "share_of_step", "max_arg", "idle", "ratio", "sum"});
      const std::string kind = definition.begin()->first.Scalar();
      const YAML::Node value = definition.begin()->second;
      const std::string value_key = key + "." + kind;
      Metric& metric = rule.metrics[index];
      const std::pair<const char*, std::pair<MetricKind, MetricUnit>> simple[] = {
          {"count", {MetricKind::Count, MetricUnit::Count}},
          {"time", {MetricKind::Time, MetricUnit::Ms}},
          {"max", {MetricKind::Max, MetricUnit::Value}},
          {"bytes", {MetricKind::Bytes, MetricUnit::Bytes}},
          {"steps_present", {MetricKind::StepsPresent, MetricUnit::Percent}},
          {"share_of_step", {MetricKind::ShareOfStep, MetricUnit::Percent}}};
      bool done = false;
      for (const auto& [field, spec] : simple) {
        if (kind != field) continue;
        metric.kind = spec.first;
        metric.unit = spec.second;
        metric.selection = selection_operand(value, value_key);
        metric.site_scoped = metric.selection == rule.primary && !rule.group_by.empty();
        done = true;
      }
      if (done) {
      } else if (kind == "max_arg") {
        r_.expect_map(value, value_key, {"select", "key"});
        if (!value["select"] || !value["key"]) r_.fail(value, value_key, "expected {select: SELECTION, key: ARG}");
        metric.kind = MetricKind::MaxArg;
        metric.unit = MetricUnit::Value;
        metric.selection = selection_operand(value["select"], value_key + ".select");
        metric.site_scoped = metric.selection == rule.primary && !rule.group_by.empty();
        metric.arg_key = r_.text(value["key"], value_key + ".key");
      } else if (kind == "idle") {
        compile_idle(rule, metric, value, value_key);
      } else {  // ratio, sum
        if (!value.IsSequence() || value.size() < 2 || (kind == "ratio" && value.size() != 2)) {
          r_.fail(value, value_key, kind == "ratio" ? "expected [NUMERATOR, DENOMINATOR]" : "expected a list of two or more metrics");
        }
        std::vector<size_t> operands;
        for (const auto& item : value) operands.push_back(metric_operand(item, value_key));
        metric.kind = kind == "ratio" ? MetricKind::Ratio : MetricKind::Sum;
        metric.unit = kind == "ratio" ? MetricUnit::Ratio : rule.metrics[operands[0]].unit;
        metric.operands = std::move(operands);
      }
    }
    // `<name>_pct` companions of per-step millisecond metrics.
    size_t count = rule.metrics.size();
    for (size_t i = 0; i < count; ++i) {
      if (rule.metrics[i].unit != MetricUnit::Ms) continue;
      std::string name = rule.metrics[i].name + "_pct";
      if (names_.count(name)) continue;  // an explicit metric of that name wins
      names_.insert(name);
      Metric metric;
      metric.name = name;
      metric.kind = MetricKind::Percent;
      metric.unit = MetricUnit::Percent;
      metric.operands = {i};
      add_metric(rule, std::move(metric));
    }
    check_cycles(rule);
  }

  // A list of idle causes (or `any`) as bits of 1 << IdleCause. `any` is every cause with something to
  // recover in the traced program: graph-capture (the GPU idles by design while graphs are recorded) and
  // external-wait (the host waits for work the trace does not show) only when named.
  static uint32_t any_cause_bits() {
    return ~0u & ~(1u << static_cast<unsigned>(IdleCause::GraphCapture)) &
           ~(1u << static_cast<unsigned>(IdleCause::ExternalWait)) & ~(1u << static_cast<unsigned>(IdleCause::WarmUp));
  }

  uint32_t compile_causes(const YAML::Node& causes, const std::string& key) {
    uint32_t bits = 0;
    std::vector<std::string> names = r_.strings(causes, key);
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "any") {
        bits |= any_cause_bits();
        continue;
      }
      auto found = cause_names().find(names[i]);
      if (found == cause_names().end()) {
        r_.fail(causes.IsSequence() ? causes[i] : causes, key,
                "unknown idle cause '" + names[i] +
                    "'; expected any, sync, data-loader, launch-bound, cpu-work, untraced, graph-capture, external-wait or "
                    "warm-up");
      }
      bits |= 1u << static_cast<unsigned>(found->second);
    }
    return bits;
  }

  void compile_idle(CompiledRule& rule, Metric& metric, const YAML::Node& value, const std::string& key) {
    r_.expect_map(value, key, {"causes", "culprits", "include_claimed", "refill", "max_stretch", "min_stretch", "stat"});
    if (auto bound = value["max_stretch"]) metric.max_stretch_ns = r_.duration_ns(bound, key + ".max_stretch");
    if (auto bound = value["min_stretch"]) metric.min_stretch_ns = r_.duration_ns(bound, key + ".min_stretch");
    metric.kind = MetricKind::Idle;
    metric.unit = MetricUnit::Ms;
    metric.idle_causes = 0;
    if (auto causes = value["causes"]) {
      metric.idle_causes = compile_causes(causes, key + ".causes");
    } else {
      metric.idle_causes = any_cause_bits();
    }
    if (auto culprits = value["culprits"]) {
      std::string name = r_.scalar(culprits, key + ".culprits");
      if (name == "site") {
        metric.culprits = Metric::Culprits::Site;
        metric.culprit_selection = rule.primary;
        metric.site_scoped = !rule.group_by.empty();
      } else {
        metric.culprits = Metric::Culprits::Selection;
        metric.culprit_selection = selection_operand(culprits, key + ".culprits");
      }
    }
    if (auto include = value["include_claimed"]) metric.include_claimed = r_.boolean(include, key + ".include_claimed");
    if (auto refill = value["refill"]) {
      metric.refill = r_.boolean(refill, key + ".refill");
      if (metric.refill && metric.culprits == Metric::Culprits::Any) {
        r_.fail(refill, key + ".refill", "needs culprits (site or a selection) to know whose stretch to extend");
      }
    }
    if (auto stat = value["stat"]) {
      std::string name = r_.scalar(stat, key + ".stat");
      if (name == "per_step") {
        metric.idle_stat = IdleStat::PerStep;
      } else if (name == "max_gap") {
        metric.idle_stat = IdleStat::MaxGap;
        metric.unit = MetricUnit::Value;
      } else if (name == "gap_every_step") {
        metric.idle_stat = IdleStat::GapEveryStep;
        metric.unit = MetricUnit::Value;
      } else {
        r_.fail(stat, key + ".stat", "expected per_step, max_gap or gap_every_step, got '" + name + "'");
      }
    }
  }

  void check_cycles(const CompiledRule& rule) {
    std::vector<int> state(rule.metrics.size(), 0);
    std::function<void(size_t)> visit = [&](size_t i) {
      if (state[i] == 2) return;
      if (state[i] == 1) {
        for (const auto& [node, definition, index] : pending_) {
          if (index == i) r_.fail(node, "metrics." + node.Scalar(), "metrics refer to each other in a cycle");
        }
        r_.fail(root_["metrics"], "metrics", "metrics refer to each other in a cycle");
      }
      state[i] = 1;
      for (size_t operand : rule.metrics[i].operands) visit(operand);
      state[i] = 2;
    };
    for (size_t i = 0; i < rule.metrics.size(); ++i) visit(i);
  }

  // Operand of a comparison: a metric, threshold or built-in name, or a number.
  size_t operand(CompiledRule& rule, const YAML::Node& at, const std::string& key, const std::string& token) {
    auto found = metric_index_.find(token);
    if (found != metric_index_.end()) return found->second;
    auto number = parse_quantity(token, QuantityKind::Any);
    if (!number) r_.fail(at, key, "unknown name '" + token + "' (not a metric, threshold, built-in value or number)");
    Metric metric;
    metric.name = "#" + token;
    metric.kind = MetricKind::Literal;
    metric.unit = MetricUnit::Value;
    metric.literal = *number;
    return add_metric(rule, std::move(metric));
  }

  Condition compile_condition(CompiledRule& rule, const YAML::Node& node, const std::string& key) {
    Condition condition;
    if (node.IsScalar()) {
      std::istringstream words(node.Scalar());
      std::vector<std::string> tokens;
      for (std::string word; words >> word;) tokens.push_back(word);
      if (tokens.size() == 1) {
        condition.kind = Condition::Kind::Truthy;
        condition.left = operand(rule, node, key, tokens[0]);
        return condition;
      }
      static const std::map<std::string, CompareOp, std::less<>> ops = {
          {"<", CompareOp::Lt}, {"<=", CompareOp::Le}, {">", CompareOp::Gt},
          {">=", CompareOp::Ge}, {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}};
      if (tokens.size() != 3 || !ops.count(tokens[1])) {
        r_.fail(node, key, "expected 'NAME OP VALUE' with OP one of < <= > >= == !=, got '" + node.Scalar() + "'");
      }
      condition.kind = Condition::Kind::Compare;
      condition.left = operand(rule, node, key, tokens[0]);
      condition.op = ops.at(tokens[1]);
      condition.right = operand(rule, node, key, tokens[2]);
      return condition;
    }
    r_.expect_map(node, key, {"all", "any", "not"});
    if (node.size() != 1) r_.fail(node, key, "expected exactly one of all, any, not");
    const std::string kind = node.begin()->first.Scalar();
    const YAML::Node value = node.begin()->second;
    if (kind == "not") {
      condition.kind = Condition::Kind::Not;
      condition.children.push_back(compile_condition(rule, value, key + ".not"));
      return condition;
    }
    condition.kind = kind == "all" ? Condition::Kind::All : Condition::Kind::Any;
    if (!value.IsSequence() || value.size() == 0) r_.fail(value, key + "." + kind, "expected a non-empty list of conditions");
    for (const auto& item : value) condition.children.push_back(compile_condition(rule, item, key + "." + kind));
    return condition;
  }

  Template compile_template(const CompiledRule& rule, const YAML::Node& node, const std::string& key) {
    std::string text = r_.text(node, key);
    Template parts;
    std::string literal;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '{') {
        literal += text[i];
        continue;
      }
      size_t close = text.find('}', i);
      if (close == std::string::npos) r_.fail(node, key, "unclosed '{' in template");
      std::string name = text.substr(i + 1, close - i - 1);
      i = close;
      TemplatePart part;
      if (name.size() > 6 && name.compare(name.size() - 6, 6, ":bytes") == 0) {
        part.as_bytes = true;
        name.resize(name.size() - 6);
      }
      static const std::map<std::string, TemplatePart::Kind, std::less<>> site = {
          {"site.op", TemplatePart::Kind::SiteOp},         {"site.kernel", TemplatePart::Kind::SiteKernel},
          {"site.name", TemplatePart::Kind::SiteName},     {"site.source", TemplatePart::Kind::SiteSource},
          {"site.op_chain", TemplatePart::Kind::SiteChain}, {"idle_causes", TemplatePart::Kind::Idle},
          {"idle_culprits", TemplatePart::Kind::IdleCulprits}};
      if (auto found = site.find(name); found != site.end()) {
        part.kind = found->second;
      } else if (auto metric = metric_index_.find(name); metric != metric_index_.end()) {
        part.kind = TemplatePart::Kind::Metric;
        part.metric = metric->second;
      } else {
        r_.fail(node, key, "unknown placeholder {" + name + "}; expected a metric, threshold or built-in name, "
                           "site.op, site.kernel, site.name, site.source, site.op_chain, idle_causes or idle_culprits");
      }
      if (!literal.empty()) parts.push_back(TemplatePart{literal});
      literal.clear();
      parts.push_back(std::move(part));
    }
    if (!literal.empty()) parts.push_back(TemplatePart{literal});
    (void)rule;
    return parts;
  }

  void compile_saving(CompiledRule& rule) {
    const YAML::Node node = root_["saving"];
    r_.expect_map(node, "saving", {"ms_per_step", "method", "confidence"});
    for (const char* required : {"ms_per_step", "method"}) {
      if (!node[required]) r_.fail(node, std::string("saving.") + required, "missing required key");
    }
    const YAML::Node terms = node["ms_per_step"];
    auto add_term = [&](const YAML::Node& item) {
      SavingTerm term;
      if (item.IsScalar()) {
        term.metric = metric_operand(item, "saving.ms_per_step");
      } else {
        r_.expect_map(item, "saving.ms_per_step", {"metric", "factor", "when"});
        if (!item["metric"]) r_.fail(item, "saving.ms_per_step.metric", "missing required key");
        term.metric = metric_operand(item["metric"], "saving.ms_per_step.metric");
        if (auto factor = item["factor"]) term.factor = r_.number(factor, "saving.ms_per_step.factor");
        if (auto when = item["when"]) term.when = compile_condition(rule, when, "saving.ms_per_step.when");
      }
      rule.saving.push_back(std::move(term));
    };
    if (terms.IsSequence()) {
      if (terms.size() == 0) r_.fail(terms, "saving.ms_per_step", "expected at least one term");
      for (const auto& item : terms) add_term(item);
    } else {
      add_term(terms);
    }
    rule.saving_method = r_.text(node["method"], "saving.method");
    if (auto confidence = node["confidence"]) {
      std::string value = r_.scalar(confidence, "saving.confidence");
      if (value == "low") rule.confidence = Confidence::Low;
      else if (value == "medium") rule.confidence = Confidence::Medium;
      else if (value == "high") rule.confidence = Confidence::High;
      else r_.fail(confidence, "saving.confidence", "expected low, medium or high, got '" + value + "'");
    }
  }

  void compile_tests(CompiledRule& rule) {
    const YAML::Node node = root_["tests"];
    if (!node) return;
    if (!node.IsSequence()) r_.fail(node, "tests", "expected a list of {trace, findings, expect}");
    fs::path base = fs::path(r_.file()).parent_path();
    for (const auto& item : node) {
      r_.expect_map(item, "tests", {"trace", "findings", "expect", "thresholds"});
      if (!item["trace"] || !item["findings"]) r_.fail(item, "tests", "expected {trace: FILE, findings: COUNT}");
      RuleTest test;
      test.trace = (base / r_.text(item["trace"], "tests.trace")).lexically_normal().string();
      double findings = r_.number(item["findings"], "tests.findings");
      if (findings < 0 || findings != std::floor(findings) || findings > 1e6) {
        r_.fail(item["findings"], "tests.findings", "expected a count");
      }
      test.findings = static_cast<size_t>(findings);
      if (auto overrides = item["thresholds"]) {
        if (!overrides.IsMap()) r_.fail(overrides, "tests.thresholds", "expected a map of threshold name to number");
        for (auto it = overrides.begin(); it != overrides.end(); ++it) {
          std::string name = r_.scalar(it->first, "tests.thresholds");
          bool known = std::any_of(rule.thresholds.begin(), rule.thresholds.end(),
                                   [&name](const Threshold& t) { return t.name == name; });
          if (!known) r_.fail(it->first, "tests.thresholds." + name, "not a threshold of this rule");
          test.thresholds[name] = r_.number(it->second, "tests.thresholds." + name);
        }
      }
      if (auto expect = item["expect"]) {
        if (!expect.IsSequence()) r_.fail(expect, "tests.expect", "expected a list of expected findings");
        for (const auto& entry : expect) {
          r_.expect_map(entry, "tests.expect",
                        {"op", "kernel", "message_contains", "count_per_step", "time_ms_per_step", "steps_present_pct",
                         "saving_ms_per_step", "saving_pct"});
          RuleTestFinding finding;
          for (auto it = entry.begin(); it != entry.end(); ++it) {
            const std::string field = it->first.Scalar();
            const std::string field_key = "tests.expect." + field;
            if (field == "op") finding.op = r_.text(it->second, field_key);
            else if (field == "kernel") finding.kernel = r_.text(it->second, field_key);
            else if (field == "message_contains") finding.message_contains = r_.text(it->second, field_key);
            else finding.numbers.emplace_back(field, r_.number(it->second, field_key));
          }
          test.expect.push_back(std::move(finding));
        }
        if (test.expect.size() > test.findings) {
          r_.fail(expect, "tests.expect", "more expected findings than `findings`");
        }
      }
      rule.tests.push_back(std::move(test));
    }
  }

  struct Pending {
    YAML::Node key;
    YAML::Node definition;
    size_t index;
  };

  const Reader& r_;
  const YAML::Node root_;
  std::map<std::string, size_t, std::less<>> selection_index_;
  std::map<std::string, size_t, std::less<>> metric_index_;
  std::set<std::string, std::less<>> names_;
  std::vector<Pending> pending_;
};

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Compiles one document into `set`, checking ids and names against the rules already there.
void add_rule(RuleSet& set, std::vector<RuleInfo>& infos, std::vector<std::unique_ptr<CompiledRule>>& compiled,
              std::string_view yaml, const std::string& file) {
  Reader reader(file);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    reader.fail_at(e.mark, "yaml", e.msg);
  }
  if (!yaml_within_budget(root)) reader.fail_at(YAML::Mark::null_mark(), "yaml", yaml_budget_message());
  if (!root.IsMap()) reader.fail(root, "rule", "expected a mapping with id, name, severity, ... (see docs/RULE_LANGUAGE.md)");
  RuleInfo info;
  auto rule = std::make_unique<CompiledRule>();
  try {
    RuleCompiler(reader, root).compile(info, *rule);
  } catch (const YAML::Exception& e) {
    reader.fail_at(e.mark, "rule", e.msg);
  }
  for (const auto& other : infos) {
    if (lower(other.id) == lower(info.id)) reader.fail(root["id"], "id", "duplicate id " + info.id + " (also in " + other.file + ")");
    if (lower(other.name) == lower(info.name)) {
      reader.fail(root["name"], "name", "duplicate name " + info.name + " (also in " + other.file + ")");
    }
  }
  (void)set;
  infos.push_back(std::move(info));
  compiled.push_back(std::move(rule));
}

}  // namespace

RuleSet::RuleSet() = default;
RuleSet::~RuleSet() = default;
RuleSet::RuleSet(RuleSet&&) noexcept = default;
RuleSet& RuleSet::operator=(RuleSet&&) noexcept = default;

const RuleInfo* RuleSet::find(std::string_view id_or_name) const {
  std::string wanted = lower(id_or_name);
  for (const auto& info : infos_) {
    if (lower(info.id) == wanted || lower(info.name) == wanted) return &info;
  }
  return nullptr;
}

std::string RuleSet::closest(std::string_view text) const {
  std::string wanted = lower(text);
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& info : infos_) {
    for (const std::string* candidate : {&info.id, &info.name}) {
      size_t distance = edit_distance(wanted, lower(*candidate));
      // A prefix or substring of a name is a good hint even when the edit distance is large.
      if (lower(*candidate).find(wanted) != std::string::npos && !wanted.empty()) distance = std::min<size_t>(distance, 1);
      if (distance < best_distance) {
        best_distance = distance;
        best = *candidate;
      }
    }
  }
  return best;
}

const std::vector<RuleTest>& RuleSet::tests(size_t index) const { return compiled_.at(index)->tests; }

std::variant<RuleSet, RuleError> load_rule_text(std::string_view yaml, const std::string& file) {
  RuleSet set;
  try {
    add_rule(set, set.infos_, set.compiled_, yaml, file);
  } catch (const Failure& failure) {
    return RuleError{failure.message};
  }
  return set;
}

std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>& directories) {
  RuleSet set;
  for (const auto& directory : directories) {
    auto files = read_rule_files(directory);
    if (auto* error = std::get_if<RuleError>(&files)) return *error;
    for (const auto& [path, content] : std::get<std::vector<RuleFile>>(files)) {
      if (is_job_rule(content)) continue;  // job scope: loaded by job/
      try {
        add_rule(set, set.infos_, set.compiled_, content, path);
      } catch (const Failure& failure) {
        return RuleError{failure.message};
      }
    }
  }
  // Rules run (and claim idle time) in id order, whatever the directory layout.
  std::vector<size_t> order(set.infos_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return set.infos_[x].id < set.infos_[y].id; });
  RuleSet sorted;
  for (size_t i : order) {
    sorted.infos_.push_back(std::move(set.infos_[i]));
    sorted.compiled_.push_back(std::move(set.compiled_[i]));
  }
  return sorted;
}

}  // namespace ptadvise
