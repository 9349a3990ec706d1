// Loading rule files (docs/RULE_LANGUAGE.md): each document is read (rule_reader.h) and compiled
// (rule_compiler.h); every problem becomes one RuleError line naming the file, line, column and key, and
// nothing here ever aborts on bad input.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <variant>

#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/cores.h"
#include "ptadvise/yaml_budget.h"
#include "rule_compiler.h"

namespace ptadvise {

namespace {

using rule_loading::Reader;
using rule_loading::RuleCompiler;

struct CompiledFile {
  RuleInfo info;
  std::shared_ptr<const CompiledRule> rule;
  YAML::Mark id_mark, name_mark;  // where the duplicate id or name errors point
};

// Rule files compiled before in this process, by path and exact text: a process that loads the same rule
// directories again (the test suite, a fuzzer running `check` per input) compiles each file once. A file
// whose text changed is compiled again; failures are not kept.
class CompiledFileCache {
 public:
  std::optional<CompiledFile> find(const std::string& file, std::string_view yaml) {
    std::lock_guard lock(mutex_);
    auto it = files_.find(file);
    if (it == files_.end() || it->second.first != yaml) return std::nullopt;
    return it->second.second;
  }
  void keep(const std::string& file, std::string_view yaml, const CompiledFile& compiled) {
    std::lock_guard lock(mutex_);
    if (files_.size() >= kMaxFiles) files_.clear();  // bounded: a process loading ever new files
    files_.insert_or_assign(file, std::make_pair(std::string(yaml), compiled));
  }

 private:
  static constexpr size_t kMaxFiles = 512;
  std::mutex mutex_;
  std::unordered_map<std::string, std::pair<std::string, CompiledFile>> files_;
};

CompiledFileCache& compiled_files() {
  static CompiledFileCache cache;
  return cache;
}

CompiledFile compile_file_in_shield(std::string_view yaml, const std::string& file) {
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
  auto rule = std::make_shared<CompiledRule>();
  try {
    RuleCompiler(reader, root).compile(info, *rule);
  } catch (const YAML::Exception& e) {
    reader.fail_at(e.mark, "rule", e.msg);
  }
  return CompiledFile{std::move(info), std::move(rule), root["id"].Mark(), root["name"].Mark()};
}

// One document compiled, through the process's cache of compiled rule files when `cached`.
CompiledFile compile_cached(std::string_view yaml, const std::string& file, bool cached) {
  std::optional<CompiledFile> done = cached ? compiled_files().find(file, yaml) : std::nullopt;
  if (!done) {
    // yaml-cpp and RE2 are not exception-safe (a failed allocation inside them corrupts the heap:
    // jbeder/yaml-cpp#459, google/re2#124): the whole file is read and compiled inside a shield.
    done = without_bad_alloc_inside([&] { return compile_file_in_shield(yaml, file); });
    if (cached) compiled_files().keep(file, yaml, *done);
  }
  return std::move(*done);
}

// Adds a compiled document to `set`, checking ids and names against the rules already there.
void add_compiled(std::vector<RuleInfo>& infos, std::vector<std::shared_ptr<const CompiledRule>>& compiled,
                  CompiledFile done, const std::string& file) {
  RuleInfo& info = done.info;
  const Reader reader(file);
  for (const auto& other : infos) {
    if (ascii_lower(other.id) == ascii_lower(info.id)) {
      reader.fail_at(done.id_mark, "id", "duplicate id " + info.id + " (also in " + other.file + ")");
    }
    if (ascii_lower(other.name) == ascii_lower(info.name)) {
      reader.fail_at(done.name_mark, "name", "duplicate name " + info.name + " (also in " + other.file + ")");
    }
  }
  infos.push_back(std::move(info));
  compiled.push_back(std::move(done.rule));
}

// Compiles every file, on up to `threads` threads (yaml-cpp takes about half a millisecond per rule file,
// most of a small trace's check). Each slot holds the file's compiled rule or what its compilation threw;
// the caller takes them in file order, so errors and duplicates are reported as a serial load would.
std::vector<std::variant<CompiledFile, std::exception_ptr>> compile_all(const std::vector<RuleFile>& files,
                                                                        unsigned threads) {
  std::vector<std::variant<CompiledFile, std::exception_ptr>> out(files.size(), std::exception_ptr());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        out[i] = compile_cached(files[i].text, files[i].path, true);
      } catch (...) {
        out[i] = std::current_exception();
      }
    }
  };
  std::vector<std::jthread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the others (this one at least) do the work
    }
  }
  work();
  return out;
}

}  // namespace

RuleSet::RuleSet() = default;
RuleSet::~RuleSet() = default;
RuleSet::RuleSet(RuleSet&&) noexcept = default;
RuleSet& RuleSet::operator=(RuleSet&&) noexcept = default;

const RuleInfo* RuleSet::find(std::string_view id_or_name) const {
  std::string wanted = ascii_lower(id_or_name);
  for (const auto& info : infos_) {
    if (ascii_lower(info.id) == wanted || ascii_lower(info.name) == wanted) return &info;
  }
  return nullptr;
}

ArgKeySet RuleSet::arg_keys() const {
  ArgKeySet keys;
  for (const auto& rule : compiled_) {
    for (const Selection& selection : rule->selections) {
      for (const ArgPredicate& predicate : selection.args) keys.insert(predicate.key);
    }
    for (const Metric& metric : rule->metrics) {
      if (metric.kind == MetricKind::MaxArg) keys.insert(metric.arg_key);
    }
  }
  return keys;
}

std::string RuleSet::closest(std::string_view text) const {
  std::string wanted = ascii_lower(text);
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& info : infos_) {
    for (const std::string* candidate : {&info.id, &info.name}) {
      size_t distance = edit_distance(wanted, ascii_lower(*candidate));
      // A prefix or substring of a name is a good hint even when the edit distance is large.
      if (ascii_lower(*candidate).find(wanted) != std::string::npos && !wanted.empty()) distance = std::min<size_t>(distance, 1);
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
    add_compiled(set.infos_, set.compiled_, compile_cached(yaml, file, false), file);  // arbitrary texts: not kept
  } catch (const YamlReadError& failure) {
    return RuleError{failure.message};
  }
  return set;
}

std::variant<RuleSet, RuleError> load_rules(const std::vector<std::string>& directories) {
  std::vector<RuleFile> rule_files;
  for (const auto& directory : directories) {
    auto files = read_rule_files(directory);
    if (auto* error = std::get_if<RuleError>(&files)) return *error;
    for (auto& file : std::get<std::vector<RuleFile>>(files)) {
      if (!is_job_rule(file.text)) rule_files.push_back(std::move(file));  // job scope: loaded by job/
    }
  }
  const unsigned threads = std::min<unsigned>(usable_cores(), static_cast<unsigned>(rule_files.size() / 8 + 1));
  auto compiled = compile_all(rule_files, threads);
  RuleSet set;
  for (size_t i = 0; i < rule_files.size(); ++i) {
    try {
      if (auto* failure = std::get_if<std::exception_ptr>(&compiled[i])) std::rethrow_exception(*failure);
      add_compiled(set.infos_, set.compiled_, std::move(std::get<CompiledFile>(compiled[i])), rule_files[i].path);
    } catch (const YamlReadError& failure) {
      return RuleError{failure.message};
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
