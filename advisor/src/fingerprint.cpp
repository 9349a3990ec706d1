#include <cctype>
#include <cstdint>
#include <cstdio>

#include "ptadvise/advisor.h"

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

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Characters after which a `_123` suffix counts as an instance number rather than part of a name.
bool ends_token(std::string_view text, size_t pos) {
  if (pos >= text.size()) return true;
  switch (text[pos]) {
    case ' ': case ')': case ']': case '>': case ',': case '.': case ':': case '/': case ';': case '"':
      return true;
    default:
      return false;
  }
}

// Machines differ in where a project lives; the last two path components identify the file.
std::string stable_file(std::string_view path) {
  std::string normal(path);
  for (char& c : normal) {
    if (c == '\\') c = '/';
  }
  size_t last = normal.rfind('/');
  if (last == std::string::npos || last == 0) return normal;
  size_t before = normal.rfind('/', last - 1);
  return before == std::string::npos ? normal : normal.substr(before + 1);
}

bool is_step_marker(std::string_view name) { return name.rfind("ProfilerStep#", 0) == 0; }

bool is_identifier_char(char c) { return is_alnum(c) || c == '_'; }

// PyTorch names its own ranges `what#Class.method` (enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__,
// Optimizer.step#SGD.step): the class is what a fix changes (num_workers=0 -> 2 swaps the iterator class,
// fused=True the optimizer's), so a fingerprint keeps `what#method` only.
std::string stable_op(std::string_view name) {
  std::string normal = normalize_name(name);
  size_t hash = normal.rfind('#');
  if (hash == std::string::npos) return normal;
  size_t dot = normal.find('.', hash);
  if (dot == std::string::npos || dot == hash + 1 || dot + 1 >= normal.size()) return normal;
  for (size_t i = hash + 1; i < normal.size(); ++i) {
    if (i != dot && !is_identifier_char(normal[i])) return normal;
  }
  return normal.substr(0, hash + 1) + normal.substr(dot + 1);
}

}  // namespace

std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  size_t i = 0;
  while (i < name.size()) {
    char c = name[i];
    // 0x7f3a9c… addresses
    if (c == '0' && i + 2 < name.size() && (name[i + 1] == 'x' || name[i + 1] == 'X') && is_hex(name[i + 2]) &&
        (i == 0 || !is_alnum(name[i - 1]))) {
      size_t j = i + 2;
      while (j < name.size() && is_hex(name[j])) ++j;
      out += "0xN";
      i = j;
      continue;
    }
    // #12 (step numbers, record ids) and .py(42) (line numbers in frame names)
    if ((c == '#' || c == '(') && i + 1 < name.size() && is_digit(name[i + 1])) {
      size_t j = i + 1;
      while (j < name.size() && is_digit(name[j])) ++j;
      if (c == '#' || (j < name.size() && name[j] == ')')) {
        out += c;
        out += 'N';
        i = j;
        continue;
      }
    }
    // NLLLoss_3: an instance suffix after a letter, ending the token
    if (c == '_' && i > 0 && std::isalpha(static_cast<unsigned char>(name[i - 1])) && i + 1 < name.size() &&
        is_digit(name[i + 1])) {
      size_t j = i + 1;
      while (j < name.size() && is_digit(name[j])) ++j;
      if (ends_token(name, j)) {
        out += "_N";
        i = j;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

std::string describe_site(const Site& site) {
  std::string text;
  if (site.source) {
    text = site.source->file;
    if (site.source->line > 0) text += ":" + std::to_string(site.source->line);
    if (!site.source->function.empty()) text += " in " + site.source->function;
  }
  // The innermost few ops say where it is; the outer ones (steps, modules) mostly repeat.
  std::vector<std::string> chain;
  for (const auto& op : site.op_chain) {
    if (!is_step_marker(op)) chain.push_back(normalize_name(op));
  }
  if (!site.op.empty() && (chain.empty() || chain.back() != normalize_name(site.op))) {
    chain.push_back(normalize_name(site.op));
  }
  constexpr size_t kShownOps = 3;
  size_t first = chain.size() > kShownOps ? chain.size() - kShownOps : 0;
  std::string ops;
  for (size_t i = first; i < chain.size(); ++i) {
    if (!ops.empty()) ops += " > ";
    ops += chain[i];
  }
  if (!site.kernel.empty()) {
    if (!ops.empty()) ops += " > ";
    ops += site.kernel;
  }
  if (ops.empty()) ops = site.detail;
  if (text.empty()) return ops.empty() ? std::string("(whole trace)") : ops;
  if (!ops.empty()) text += " (" + ops + ")";
  return text;
}

std::string fingerprint(const Finding& finding) {
  uint64_t h = fnv1a(finding.rule_id);
  h = fnv1a("\x1f" + stable_op(finding.site.op), h);
  h = fnv1a("\x1f" + normalize_name(finding.site.kernel), h);
  if (finding.site.source) {
    // The user's file and function identify the site; the op chain above it varies with versions.
    h = fnv1a("\x1d" + stable_file(finding.site.source->file), h);
    h = fnv1a("\x1f" + normalize_name(finding.site.source->function), h);
  } else {
    for (const auto& op : finding.site.op_chain) {
      if (is_step_marker(op)) continue;  // present or not depending on the profiler schedule
      h = fnv1a("\x1e" + stable_op(op), h);
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace ptadvise
