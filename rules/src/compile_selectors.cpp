// Selections: name patterns, kernel families, selectors and their argument predicates.
#include <charconv>
#include <cmath>
#include <functional>

#include "rule_compiler.h"

namespace ptadvise::rule_loading {

NameMatcher RuleCompiler::compile_names(const YAML::Node& node, const std::string& key) {
  NameMatcher matcher;
  if (node.IsMap()) {
    r_.expect_keys(node, key, {"glob", "regex"});
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

void RuleCompiler::compile_selections(CompiledRule& rule) {
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
void RuleCompiler::compile_families(const YAML::Node& node, const std::string& key, Selection& selection) {
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

Selection RuleCompiler::compile_selector(const YAML::Node& node, const std::string& key, std::vector<size_t>& depends) {
  r_.expect_keys(node, key,
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
      r_.expect_keys(n, field_key, {"select", "within"});
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

ArgPredicate RuleCompiler::compile_arg(const YAML::Node& node, const std::string& key) {
  r_.expect_keys(node, key,
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

}  // namespace ptadvise::rule_loading
