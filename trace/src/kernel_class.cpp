// The kernel family table (docs/KERNEL_FAMILIES.md): parsing with positions, one RE2::Set over every row's
// patterns (linear in the name's length), first matching row wins.
#include "ptadvise/kernel_class.h"

#include <re2/re2.h>
#include <re2/set.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>

#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/io.h"
#include "ptadvise/yaml_budget.h"
#include "ptadvise/yaml_reader.h"

namespace ptadvise {

namespace detail {
std::string_view builtin_kernel_table();  // generated from data/kernel_families.yaml
}

namespace {

constexpr std::string_view kFamilyNames[kKernelFamilyCount] = {
    "matmul-tensor-core", "matmul-simt", "communication", "copy", "elementwise", "reduction", "other"};

class TableReader : public YamlReader {
 public:
  using YamlReader::YamlReader;

  std::string origin(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.is_null() ? file() : file() + ":" + std::to_string(mark.line + 1);
  }

  // A string or a list of strings.
  std::vector<std::string> texts(const YAML::Node& node, const std::string& key) const {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(text(node, key));
    } else if (node.IsSequence() && node.size() > 0) {
      for (size_t i = 0; i < node.size(); ++i) out.push_back(text(node[i], key + "[" + std::to_string(i) + "]"));
    } else {
      fail(node, key, "expected a string or a non-empty list of strings");
    }
    return out;
  }

  std::vector<KernelFamilyRule> read(std::string_view yaml) const {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(yaml));
    } catch (const YAML::Exception& e) {
      fail_at(e.mark, "yaml", e.msg);
    }
    if (!yaml_within_budget(root)) fail_at(YAML::Mark::null_mark(), "yaml", yaml_budget_message());
    if (!root.IsMap()) fail(root, "table", "expected a mapping with `rules:`");
    expect_keys(root, "table", {"version", "rules"});
    if (root["version"] && (!root["version"].IsScalar() || root["version"].Scalar() != "1")) {
      fail(root["version"], "version", "expected 1");
    }
    const YAML::Node rows = root["rules"];
    if (!rows || !rows.IsSequence()) fail(rows ? rows : root, "rules", "expected a list of rows");
    std::vector<KernelFamilyRule> rules;
    for (size_t r = 0; r < rows.size(); ++r) {
      const YAML::Node row = rows[r];
      const std::string key = "rules[" + std::to_string(r) + "]";
      expect_keys(row, key, {"family", "glob", "regex", "examples", "why"});
      KernelFamilyRule rule;
      rule.origin = origin(row);
      if (!row["family"]) fail(row, key + ".family", "missing; expected one of " + family_list());
      std::string family = text(row["family"], key + ".family");
      auto parsed = parse_kernel_family(family);
      if (!parsed) fail(row["family"], key + ".family", "unknown family '" + family + "'; expected one of " + family_list());
      rule.family = *parsed;
      if (row["glob"]) rule.globs = texts(row["glob"], key + ".glob");
      if (row["regex"]) {
        rule.regexes = texts(row["regex"], key + ".regex");
        for (size_t i = 0; i < rule.regexes.size(); ++i) {
          RE2::Options options;
          options.set_log_errors(false);
          RE2 check(rule.regexes[i], options);  // inside parse()'s shield, as the whole read
          if (!check.ok()) {
            const YAML::Node at = row["regex"].IsSequence() ? row["regex"][i] : row["regex"];
            fail(at, key + ".regex", "invalid regular expression: " + check.error());
          }
        }
      }
      if (rule.globs.empty() && rule.regexes.empty()) fail(row, key, "expected `glob:` or `regex:`");
      if (row["examples"]) rule.examples = texts(row["examples"], key + ".examples");
      if (row["why"]) rule.why = text(row["why"], key + ".why");
      rules.push_back(std::move(rule));
    }
    return rules;
  }

  static std::string family_list() {
    std::string list;
    for (auto name : kFamilyNames) list += (list.empty() ? "" : ", ") + std::string(name);
    return list;
  }
};

// A glob as an anchored regex: '*' any run, '?' one character, the rest literal.
std::string glob_to_regex(std::string_view glob) {
  std::string out = "^";
  std::string literal;
  auto flush = [&] {
    out += without_bad_alloc_inside([&] { return RE2::QuoteMeta(literal); });
    literal.clear();
  };
  for (char c : glob) {
    if (c == '*' || c == '?') {
      flush();
      out += c == '*' ? ".*" : ".";
    } else {
      literal += c;
    }
  }
  flush();
  return out + "$";
}

// Kineto writes demangled function templates with their return type ("void at::native::..."); rows match
// the name without it.
std::string_view without_return_type(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  return name;
}

}  // namespace

std::string_view to_string(KernelFamily family) { return kFamilyNames[static_cast<size_t>(family)]; }

std::optional<KernelFamily> parse_kernel_family(std::string_view text) {
  for (size_t f = 0; f < kKernelFamilyCount; ++f) {
    if (kFamilyNames[f] == text) return static_cast<KernelFamily>(f);
  }
  return std::nullopt;
}

struct KernelClassifier::Compiled {
  std::unique_ptr<RE2::Set> set;
  std::vector<std::unique_ptr<RE2>> each;  // the same patterns one by one: used when the set's DFA runs out of memory
};

KernelClassifier::KernelClassifier() = default;
KernelClassifier::~KernelClassifier() = default;
KernelClassifier::KernelClassifier(KernelClassifier&&) noexcept = default;
KernelClassifier& KernelClassifier::operator=(KernelClassifier&&) noexcept = default;

std::variant<KernelClassifier, KernelTableError> KernelClassifier::compile(std::vector<KernelFamilyRule> rules,
                                                                           bool check_examples) {
  KernelClassifier classifier;
  classifier.compiled_ = std::make_unique<Compiled>();
  RE2::Options options;
  options.set_log_errors(false);
  options.set_dot_nl(true);
  options.set_max_mem(64 << 20);
  // RE2 is not exception-safe: all of the compilation runs in one shield (a failed allocation inside RE2
  // corrupted the heap).
  auto problem = without_bad_alloc_inside([&]() -> std::optional<KernelTableError> {
    Compiled& compiled = *classifier.compiled_;
    compiled.set = std::make_unique<RE2::Set>(options, RE2::UNANCHORED);
    for (uint32_t r = 0; r < rules.size(); ++r) {
      std::vector<std::string> patterns;
      for (const auto& glob : rules[r].globs) patterns.push_back(glob_to_regex(glob));
      patterns.insert(patterns.end(), rules[r].regexes.begin(), rules[r].regexes.end());
      for (const auto& pattern : patterns) {
        std::string error;
        if (compiled.set->Add(pattern, &error) < 0) {
          return KernelTableError{single_line(rules[r].origin + ": invalid pattern '" + pattern + "': " + error)};
        }
        compiled.each.push_back(std::make_unique<RE2>(pattern, options));
        classifier.pattern_rule_.push_back(r);
      }
    }
    if (!compiled.set->Compile()) {
      return KernelTableError{"kernel family table: the patterns need more memory than allowed (64 MiB)"};
    }
    return std::nullopt;
  });
  if (problem) return std::move(*problem);
  classifier.rules_ = std::move(rules);
  if (!check_examples) return classifier;
  for (const KernelFamilyRule& rule : classifier.rules_) {
    for (const std::string& example : rule.examples) {
      KernelFamily got = classifier.classify(example);
      if (got != rule.family) {
        const KernelFamilyRule* decided = classifier.rule_for(example);
        return KernelTableError{single_line(
            rule.origin + ": example '" + example + "' is classified as " + std::string(to_string(got)) +
            (decided != nullptr ? " by the row at " + decided->origin : std::string(" (no row matches)")) +
            ", not as " + std::string(to_string(rule.family)))};
      }
    }
  }
  return classifier;
}

std::variant<KernelClassifier, KernelTableError> KernelClassifier::parse(std::string_view yaml,
                                                                         const std::string& file) {
  std::vector<KernelFamilyRule> rules;
  try {
    // yaml-cpp and RE2 are not exception-safe (a failed allocation inside them corrupts the heap:
    // jbeder/yaml-cpp#459, google/re2#124): the table is read and compiled inside shields.
    rules = without_bad_alloc_inside([&] { return TableReader(file).read(yaml); });
  } catch (const YamlReadError& failure) {
    return KernelTableError{failure.message};
  }
  return compile(std::move(rules), true);
}

std::variant<KernelClassifier, KernelTableError> KernelClassifier::load(const std::string& path) {
  std::string text;
  if (auto error = read_small_file(path, text)) {
    return KernelTableError{path + ": cannot read the kernel family table: " + *error};
  }
  return parse(text, path);
}

std::variant<KernelClassifier, KernelTableError> KernelClassifier::extended_by(const KernelClassifier& first) const {
  std::vector<KernelFamilyRule> rules = first.rules_;
  rules.insert(rules.end(), rules_.begin(), rules_.end());
  // Examples were checked when each table was parsed; a user's row may reclassify a shipped example.
  return compile(std::move(rules), false);
}

const KernelClassifier& KernelClassifier::builtin() {
  static const KernelClassifier table = [] {
    auto parsed = parse(detail::builtin_kernel_table(), "data/kernel_families.yaml");
    // The shipped table is checked by the build's tests; a broken one is a defect of the program.
    if (auto* error = std::get_if<KernelTableError>(&parsed)) throw std::logic_error(error->message);
    return std::move(std::get<KernelClassifier>(parsed));
  }();
  return table;
}

const KernelFamilyRule* KernelClassifier::rule_for(std::string_view kernel_name) const {
  if (!compiled_ || rules_.empty()) return nullptr;
  const std::string_view name = without_return_type(kernel_name);
  const re2::StringPiece text(name.data(), name.size());
  std::vector<int> matched;
  RE2::Set::ErrorInfo error;
  if (without_bad_alloc_inside([&] { return compiled_->set->Match(text, &matched, &error); })) {
    int first = *std::min_element(matched.begin(), matched.end());
    return &rules_[pattern_rule_[static_cast<size_t>(first)]];
  }
  if (error.kind == RE2::Set::kNoError) return nullptr;
  // The set's DFA ran out of memory on this name: the patterns one by one, in order (still linear each).
  for (size_t p = 0; p < compiled_->each.size(); ++p) {
    if (without_bad_alloc_inside([&] { return RE2::PartialMatch(text, *compiled_->each[p]); })) {
      return &rules_[pattern_rule_[p]];
    }
  }
  return nullptr;
}

KernelFamily KernelClassifier::classify(std::string_view kernel_name) const {
  const KernelFamilyRule* rule = rule_for(kernel_name);
  return rule != nullptr ? rule->family : KernelFamily::Other;
}

std::vector<KernelFamily> classify_kernels(const KernelClassifier& classifier, const Timeline& timeline) {
  std::vector<KernelFamily> families(timeline.strings.size(), KernelFamily::Other);
  std::vector<uint8_t> done(timeline.strings.size(), 0);
  const Events& events = timeline.events;
  for (EventIndex i = 0; i < events.size(); ++i) {
    if (events.kind[i] != EventKind::Kernel) continue;
    const StringId id = events.name[i];
    if (done[id] != 0) continue;
    done[id] = 1;
    families[id] = classifier.classify(timeline.strings.view(id));
  }
  return families;
}

std::variant<KernelClassifier, KernelTableError> kernel_classifier_with(const std::vector<std::string>& user_tables) {
  auto combined = KernelClassifier::builtin().extended_by(KernelClassifier());
  for (const std::string& path : user_tables) {
    auto user = KernelClassifier::load(path);
    if (auto* error = std::get_if<KernelTableError>(&user)) return *error;
    auto* base = std::get_if<KernelClassifier>(&combined);
    combined = base->extended_by(std::get<KernelClassifier>(user));
    if (std::holds_alternative<KernelTableError>(combined)) return combined;
  }
  return combined;
}

}  // namespace ptadvise
