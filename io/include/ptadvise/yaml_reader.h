// Reading a YAML document that people write (rule files, the kernel family table): every problem is one
// line "file:line:column: key: what" that points at the offending node. Header-only: include it only from
// code that links yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ptadvise {

// Thrown by YamlReader::fail; the code reading the document catches it and returns the message.
struct YamlReadError {
  std::string message;
};

// One line whatever the document contained: quoted values may hold newlines or control characters.
inline std::string single_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += '?';
    else out += c;
  }
  return out;
}

// "file:line:column" of a node, or the file alone when yaml-cpp has no position (a node built in memory).
inline std::string yaml_where(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& what) const {
    fail_at(node.Mark(), key, what);
  }
  [[noreturn]] void fail_at(const YAML::Mark& mark, const std::string& key, const std::string& what) const {
    throw YamlReadError{single_line(yaml_where(file_, mark) + ": " + key + ": " + what)};
  }

  // A mapping whose keys are all among `allowed`.
  void expect_keys(const YAML::Node& node, const std::string& key, std::initializer_list<std::string_view> allowed) const {
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
  // A string with something other than white space in it.
  std::string text(const YAML::Node& node, const std::string& key) const {
    std::string value = scalar(node, key);
    if (value.find_first_not_of(" \t\r\n") == std::string::npos) fail(node, key, "expected a non-empty string");
    return value;
  }

  // `parent.child`, or `child` at the top of the document.
  static std::string join(const std::string& parent, const std::string& child) {
    return parent.empty() ? child : parent + "." + child;
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace ptadvise
