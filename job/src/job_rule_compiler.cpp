// Job rules (`scope: job`): loading and validation of the YAML into compiled rules (job_rule_model.h).
// docs/RULE_LANGUAGE.md "Job scope" documents the language; keep both in step.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "ptadvise/bad_alloc_shield.h"
#include "job_rule_model.h"
#include "ptadvise/yaml_budget.h"
#include "ptadvise/yaml_reader.h"

namespace ptadvise {

namespace {

namespace fs = std::filesystem;
using job_detail::Condition;
using job_detail::Op;
using job_detail::Operand;
using job_detail::Over;
using job_detail::TemplatePart;

struct Failure {
  std::string message;
};

[[noreturn]] void fail(const std::string& file, const YAML::Node& node, const std::string& key, const std::string& what) {
  std::ostringstream out;
  out << file;
  if (node.IsDefined() && !node.Mark().is_null()) out << ':' << node.Mark().line + 1 << ':' << node.Mark().column + 1;
  out << ": " << key << ": " << what;
  std::string line;
  for (char c : out.str()) line += (c == '\n' || static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  throw Failure{line};
}

std::vector<std::string> strings_of(const std::string& file, const YAML::Node& node, const std::string& key) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar()) fail(file, item, key, "expected a string");
      out.push_back(item.Scalar());
    }
  } else {
    fail(file, node, key, "expected a string or a list of strings");
  }
  return out;
}

std::string text_of(const std::string& file, const YAML::Node& node, const std::string& key) {
  if (!node.IsDefined()) fail(file, node, key, "missing required key");
  if (!node.IsScalar() || node.Scalar().find_first_not_of(" \t\r\n") == std::string::npos) {
    fail(file, node, key, "expected a non-empty string");
  }
  return node.Scalar();
}

double number_of(const std::string& file, const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) fail(file, node, key, "expected a number");
  const std::string& text = node.Scalar();
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    fail(file, node, key, "expected a number, got '" + text + "'");
  }
  return value;
}

class Compiler {
 public:
  Compiler(std::string file, const YAML::Node& root) : file_(std::move(file)), root_(root) {}

  // The one transform of job rules, `keep_pace`: the finding's ranks arrive at every collective with the
  // others (docs/RULE_LANGUAGE.md, "Job scope"; docs/WHATIF.md, "Jobs").
  void transform(const YAML::Node& node, RuleInfo& info, JobRuleSetImpl::Rule& rule) {
    if (!node.IsMap()) fail(file_, node, "transform", "expected {apply: [keep_pace], method}");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      if (key != "apply" && key != "method") fail(file_, it->first, "transform." + key, "unknown key; expected apply, method");
    }
    const YAML::Node apply = node["apply"];
    if (!apply.IsSequence() || apply.size() != 1 || !apply[0].IsScalar() || apply[0].Scalar() != "keep_pace") {
      fail(file_, apply ? apply : node, "transform.apply",
           "expected [keep_pace] (job rules have one transform: the named ranks keep pace with the others)");
    }
    if (rule.over != Over::Rank && rule.over != Over::Ranks) {
      fail(file_, apply, "transform.apply", "keep_pace moves the ranks a finding names: the rule must be over rank or ranks");
    }
    rule.keep_pace = true;
    info.transform = "keep_pace";
    info.transform_method = text_of(file_, node["method"], "transform.method");
  }

  void compile(RuleInfo& info, JobRuleSetImpl::Rule& rule) {
    static const std::set<std::string> allowed{"id", "name", "scope", "over", "severity", "tags", "summary", "fix",
                                               "docs", "thresholds", "when", "message", "short_message",
                                               "short_fix", "saving", "lone_rank", "tests", "transform"};
    if (!root_.IsMap()) fail(file_, root_, "", "expected a mapping");
    for (auto it = root_.begin(); it != root_.end(); ++it) {
      if (!it->first.IsScalar() || !allowed.count(it->first.Scalar())) {
        fail(file_, it->first, it->first.IsScalar() ? it->first.Scalar() : "",
             "unknown key; expected one of id, name, scope, over, severity, tags, summary, fix, docs, thresholds, "
             "when, message, short_message, short_fix, saving, lone_rank, tests, transform");
      }
    }
    info.file = file_;
    info.id = text_of(file_, root_["id"], "id");
    info.name = text_of(file_, root_["name"], "name");
    auto severity = parse_severity(text_of(file_, root_["severity"], "severity"));
    if (!severity) fail(file_, root_["severity"], "severity", "expected info, warning or error");
    info.severity = *severity;
    info.tags = strings_of(file_, root_["tags"], "tags");
    info.summary = text_of(file_, root_["summary"], "summary");
    info.fix = text_of(file_, root_["fix"], "fix");
    if (auto short_fix = root_["short_fix"]) {
      info.short_fix = text_of(file_, short_fix, "short_fix");
      size_t columns = 0;
      for (char c : info.short_fix) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
      if (columns > kShortFixColumns) {
        fail(file_, short_fix, "short_fix",
             "expected at most " + std::to_string(kShortFixColumns) + " characters (it is one line of the text report)");
      }
    }
    const YAML::Node docs = root_["docs"];
    if (!docs.IsMap()) fail(file_, docs, "docs", "expected {what, why, example, fix}");
    info.docs.what = text_of(file_, docs["what"], "docs.what");
    info.docs.why = text_of(file_, docs["why"], "docs.why");
    info.docs.example = text_of(file_, docs["example"], "docs.example");
    info.docs.fix = text_of(file_, docs["fix"], "docs.fix");
    const std::string over = text_of(file_, root_["over"], "over");
    if (over == "job") rule.over = Over::Job;
    else if (over == "rank") rule.over = Over::Rank;
    else if (over == "ranks") rule.over = Over::Ranks;
    else if (over == "collective_type") rule.over = Over::CollectiveType;
    else fail(file_, root_["over"], "over", "expected job, rank, ranks or collective_type, got '" + over + "'");
    over_ = rule.over;
    if (auto transform = root_["transform"]) this->transform(transform, info, rule);
    if (auto lone = root_["lone_rank"]) {
      const std::string text = text_of(file_, lone, "lone_rank");
      if (text != "true" && text != "false") fail(file_, lone, "lone_rank", "expected true or false, got '" + text + "'");
      rule.lone_rank = text == "true";
    }
    if (auto thresholds = root_["thresholds"]) {
      if (!thresholds.IsMap()) fail(file_, thresholds, "thresholds", "expected a mapping of name to {value, unit, doc}");
      for (auto it = thresholds.begin(); it != thresholds.end(); ++it) {
        ThresholdInfo t;
        t.name = it->first.Scalar();
        const std::string key = "thresholds." + t.name;
        if (!it->second.IsMap()) fail(file_, it->second, key, "expected {value, unit, doc}");
        t.value = number_of(file_, it->second["value"], key + ".value");
        t.unit = text_of(file_, it->second["unit"], key + ".unit");
        t.doc = text_of(file_, it->second["doc"], key + ".doc");
        rule.thresholds.push_back(t);
      }
    }
    thresholds_ = &rule.thresholds;
    if (!root_["when"]) fail(file_, root_, "when", "missing required key");
    rule.when = condition(root_["when"], "when");
    rule.message = message(text_of(file_, root_["message"], "message"), root_["message"]);
    if (auto short_message = root_["short_message"]) {
      rule.short_message = message(text_of(file_, short_message, "short_message"), short_message, "short_message");
    }
    const YAML::Node saving = root_["saving"];
    if (!saving.IsMap()) fail(file_, saving, "saving", "expected {ms_per_step, method, confidence}");
    rule.saving_metric = text_of(file_, saving["ms_per_step"], "saving.ms_per_step");
    check_metric(rule.saving_metric, saving["ms_per_step"], "saving.ms_per_step");
    info.saving_method = text_of(file_, saving["method"], "saving.method");
    const std::string confidence = saving["confidence"] ? text_of(file_, saving["confidence"], "saving.confidence") : "medium";
    if (confidence == "low") rule.confidence = Confidence::Low;
    else if (confidence == "medium") rule.confidence = Confidence::Medium;
    else if (confidence == "high") rule.confidence = Confidence::High;
    else fail(file_, saving["confidence"], "saving.confidence", "expected low, medium or high");
    info.thresholds = rule.thresholds;
    tests(rule);
  }

 private:
  void check_metric(const std::string& name, const YAML::Node& node, const std::string& key) const {
    const auto& names = job_detail::metric_names(job_detail::row_kind(over_));
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      fail(file_, node, key, "unknown metric '" + name + "'; expected one of " + list);
    }
  }

  Operand operand(const std::string& text, const YAML::Node& node, const std::string& key) const {
    Operand o;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) {
      o.literal = value;
      return o;
    }
    for (size_t t = 0; t < thresholds_->size(); ++t) {
      if ((*thresholds_)[t].name == text) {
        o.threshold = static_cast<int>(t);
        return o;
      }
    }
    check_metric(text, node, key);
    o.is_metric = true;
    o.metric = text;
    return o;
  }

  Condition condition(const YAML::Node& node, const std::string& key) const {
    Condition c;
    if (node.IsMap()) {
      if (node.size() != 1) fail(file_, node, key, "expected one of all, any, not");
      const std::string kind = node.begin()->first.Scalar();
      const YAML::Node value = node.begin()->second;
      if (kind == "not") {
        c.kind = Condition::Kind::Not;
        c.children.push_back(condition(value, key + ".not"));
        return c;
      }
      if (kind != "all" && kind != "any") fail(file_, node, key, "expected all, any or not, got '" + kind + "'");
      c.kind = kind == "all" ? Condition::Kind::All : Condition::Kind::Any;
      if (!value.IsSequence() || value.size() == 0) fail(file_, value, key + "." + kind, "expected a non-empty list");
      for (const auto& item : value) c.children.push_back(condition(item, key + "." + kind));
      return c;
    }
    if (!node.IsScalar()) fail(file_, node, key, "expected a comparison like 'metric >= threshold'");
    std::istringstream words(node.Scalar());
    std::string left, op, right, extra;
    words >> left >> op >> right;
    if (left.empty() || op.empty() || right.empty() || (words >> extra)) {
      fail(file_, node, key, "expected 'METRIC OP VALUE' with OP one of < <= > >= == !=, got '" + node.Scalar() + "'");
    }
    static const std::pair<const char*, Op> ops[] = {{"<", Op::Lt}, {"<=", Op::Le}, {">", Op::Gt},
                                                     {">=", Op::Ge}, {"==", Op::Eq}, {"!=", Op::Ne}};
    bool found = false;
    for (const auto& [text, value] : ops) {
      if (op == text) {
        c.op = value;
        found = true;
      }
    }
    if (!found) fail(file_, node, key, "unknown comparison '" + op + "'");
    c.left = operand(left, node, key);
    c.right = operand(right, node, key);
    return c;
  }

  std::vector<TemplatePart> message(const std::string& text, const YAML::Node& node,
                                    const std::string& key = "message") const {
    std::vector<TemplatePart> parts;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t open = text.find('{', pos);
      if (open == std::string::npos) {
        parts.push_back({text.substr(pos), ""});
        break;
      }
      size_t close = text.find('}', open);
      if (close == std::string::npos) fail(file_, node, key, "a '{' without its '}'");
      if (open > pos) parts.push_back({text.substr(pos, open - pos), ""});
      std::string name = text.substr(open + 1, close - open - 1);
      if (name != "ranks" && name != "rank_list" && name != "cause" && name != "type") {
        check_metric(name, node, key);
      }
      parts.push_back({"", name});
      pos = close + 1;
    }
    return parts;
  }

  void tests(JobRuleSetImpl::Rule& rule) const {
    const YAML::Node node = root_["tests"];
    if (!node) return;
    if (!node.IsSequence()) fail(file_, node, "tests", "expected a list of {traces, findings}");
    const fs::path base = fs::path(file_).parent_path();
    for (const auto& item : node) {
      JobRuleTest test;
      if (!item.IsMap() || !item["traces"] || !item["findings"]) {
        fail(file_, item, "tests", "expected {traces: [DIR or FILES], findings: COUNT}");
      }
      for (const auto& trace : strings_of(file_, item["traces"], "tests.traces")) {
        test.traces.push_back((base / trace).lexically_normal().string());
      }
      const double count = number_of(file_, item["findings"], "tests.findings");
      if (count < 0 || count != std::floor(count)) fail(file_, item["findings"], "tests.findings", "expected a count");
      test.findings = static_cast<size_t>(count);
      if (auto ranks = item["ranks"]) {
        for (const auto& r : ranks) test.ranks.push_back(static_cast<int>(number_of(file_, r, "tests.ranks")));
      }
      if (auto contains = item["message_contains"]) test.message_contains = text_of(file_, contains, "tests.message_contains");
      if (auto numbers = item["numbers"]) {
        for (auto it = numbers.begin(); it != numbers.end(); ++it) {
          test.numbers.emplace_back(it->first.Scalar(), number_of(file_, it->second, "tests.numbers"));
        }
      }
      if (auto overrides = item["thresholds"]) {
        for (auto it = overrides.begin(); it != overrides.end(); ++it) {
          test.thresholds[it->first.Scalar()] = number_of(file_, it->second, "tests.thresholds");
        }
      }
      for (auto field = item.begin(); field != item.end(); ++field) {
        const YAML::Node name = field->first;
        const std::string key = name.Scalar();
        if (key != "traces" && key != "findings" && key != "ranks" && key != "message_contains" && key != "numbers" &&
            key != "thresholds") {
          fail(file_, name, "tests." + key, "unknown key; expected traces, findings, ranks, message_contains, numbers, thresholds");
        }
      }
      rule.tests.push_back(std::move(test));
    }
  }

  std::string file_;
  const YAML::Node& root_;
  Over over_ = Over::Job;
  const std::vector<ThresholdInfo>* thresholds_ = nullptr;
};

void add_rule_in_shield(JobRuleSetImpl& set, std::string_view yaml, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& error) {
    std::ostringstream out;
    out << yaml_where(file, error.mark) << ": " << error.msg;
    throw Failure{single_line(out.str())};  // the parser quotes the offending character: it may be a newline
  }
  if (!yaml_within_budget(root)) throw Failure{file + ": yaml: " + yaml_budget_message()};
  RuleInfo info;
  JobRuleSetImpl::Rule rule;
  Compiler(file, root).compile(info, rule);
  for (const auto& other : set.infos) {
    if (other.id == info.id || other.name == info.name) {
      throw Failure{file + ": id: " + info.id + " / " + info.name + " is already used by " + other.file};
    }
  }
  set.infos.push_back(std::move(info));
  set.rules.push_back(std::move(rule));
}

// yaml-cpp is not exception-safe (a failed allocation inside it corrupts the heap: jbeder/yaml-cpp#459):
// the whole document is read inside a shield.
void add_rule(JobRuleSetImpl& set, std::string_view yaml, const std::string& file) {
  without_bad_alloc_inside([&] { add_rule_in_shield(set, yaml, file); });
}

}  // namespace

JobRuleSet::JobRuleSet() : impl_(std::make_unique<JobRuleSetImpl>()) {}
JobRuleSet::~JobRuleSet() = default;
JobRuleSet::JobRuleSet(JobRuleSet&&) noexcept = default;
JobRuleSet& JobRuleSet::operator=(JobRuleSet&&) noexcept = default;
const std::vector<RuleInfo>& JobRuleSet::infos() const { return impl_->infos; }
const RuleInfo* JobRuleSet::find(std::string_view id_or_name) const {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (const auto& info : impl_->infos) {
    if (lower(info.id) == lower(id_or_name) || lower(info.name) == lower(id_or_name)) return &info;
  }
  return nullptr;
}

bool JobRuleSet::judges_lone_rank(std::string_view id) const {
  for (size_t r = 0; r < impl_->infos.size(); ++r) {
    if (impl_->infos[r].id == id) return impl_->rules[r].lone_rank;
  }
  return false;
}

const std::vector<JobRuleTest>& job_rule_tests(const JobRuleSet& rules, size_t index) {
  return rules.impl().rules.at(index).tests;
}

std::variant<JobRuleSet, JobRuleError> load_job_rule_text(std::string_view yaml, const std::string& file) {
  JobRuleSet set;
  try {
    add_rule(set.impl(), yaml, file);
  } catch (const Failure& failure) {
    return JobRuleError{failure.message};
  } catch (const YAML::Exception& error) {
    return JobRuleError{single_line(file + ": " + error.msg)};
  }
  return set;
}

std::variant<JobRuleSet, JobRuleError> load_job_rules(const std::vector<std::string>& directories) {
  JobRuleSet set;
  for (const auto& directory : directories) {
    auto files = read_rule_files(directory);
    if (auto* error = std::get_if<RuleError>(&files)) return JobRuleError{error->message};
    for (const auto& [path, content] : std::get<std::vector<RuleFile>>(files)) {
      if (!is_job_rule(content)) continue;
      try {
        add_rule(set.impl(), content, path);
      } catch (const Failure& failure) {
        return JobRuleError{failure.message};
      } catch (const YAML::Exception& error) {
        return JobRuleError{single_line(path + ": " + error.msg)};
      }
    }
  }
  return set;
}

}  // namespace ptadvise
