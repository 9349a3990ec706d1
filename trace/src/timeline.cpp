// Timeline accessors: event kind names, device lookup and lazily parsed args.
#include <simdjson.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "checked_iterate.h"
#include "input.h"
#include "json_scan.h"
#include "numbers.h"
#include "ptadvise/timeline.h"

namespace ptadvise {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::CpuOp:
      return "cpu_op";
    case EventKind::UserAnnotation:
      return "user_annotation";
    case EventKind::PythonFunction:
      return "python_function";
    case EventKind::Runtime:
      return "cuda_runtime";
    case EventKind::Driver:
      return "cuda_driver";
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "gpu_memcpy";
    case EventKind::Memset:
      return "gpu_memset";
    case EventKind::Sync:
      return "cuda_sync";
    case EventKind::GpuAnnotation:
      return "gpu_user_annotation";
    case EventKind::Collective:
      return "collective_comm";
    case EventKind::MemoryInstant:
      return "memory";
    case EventKind::Instant:
      return "instant";
    case EventKind::Other:
      return "other";
  }
  return "other";
}

ArgKeySet kept_arg_keys(const ArgKeySet& extra) {
  ArgKeySet keys = extra;
  for (std::string_view key : kCodeArgKeys) keys.emplace(key);
  return keys;
}

const DeviceInfo* Timeline::device(int32_t id) const {
  for (const DeviceInfo& info : devices) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

namespace {

namespace ondemand = simdjson::ondemand;

// The raw JSON text of args[key] (a string keeps its quotes), or nullopt. The args text lies inside the
// timeline's padded buffer, so simdjson may read past its end.
struct ArgLookup {
  std::optional<std::string_view> token;  // raw text of the value
  std::optional<std::string> text;        // unescaped, when the value is a string
};

ArgLookup find_arg(const Timeline& timeline, EventIndex i, std::string_view key) {
  if (timeline.kept_arg_keys && !timeline.kept_arg_keys->contains(key)) {
    throw std::logic_error("the args key \"" + std::string(key) +
                           "\" was dropped at load: add it to kCodeArgKeys (timeline.h) or the rules' keys");
  }
  ArgLookup result;
  if (timeline.buffer == nullptr || i >= timeline.events.size()) return result;
  const uint64_t offset = timeline.events.args_offset[i];
  const uint32_t length = timeline.events.args_length[i];
  if (length == 0 || offset + length > timeline.buffer_size) return result;
  thread_local ondemand::parser parser;
  ondemand::document doc;
  const size_t allocated = timeline.buffer_size - offset + detail::PaddedBuffer::kPadding;
  if (detail::checked_iterate(parser, timeline.buffer + offset, length, allocated, doc)) return result;
  ondemand::object object;
  if (doc.get_object().get(object)) return result;
  for (auto field_result : object) {
    if (field_result.error()) return result;
    ondemand::field& field = field_result.value_unsafe();  // not copied: see read_window_text
    std::string_view field_key;
    if (field.unescaped_key().get(field_key)) return result;
    if (field_key != key) continue;
    ondemand::value& value = field.value();
    std::string_view token = value.raw_json_token();
    if (token.empty()) return result;
    if (token.front() == '"') {
      std::string_view text;
      if (value.get_string().get(text)) return result;
      result.text = std::string(text);
      result.token = token;
      return result;
    }
    if (token.front() == '{' || token.front() == '[') {
      const char* begin = token.data();
      const size_t start = static_cast<size_t>(begin - timeline.buffer);
      size_t end = detail::skip_value(timeline.buffer, offset + length, start);
      if (end == detail::kNotFound) return result;
      result.token = std::string_view(begin, end - start);
      return result;
    }
    while (!token.empty() && detail::is_json_space(token.back())) token.remove_suffix(1);
    if (token == "null") return result;
    result.token = token;
    return result;
  }
  return result;
}

}  // namespace

std::optional<int64_t> Timeline::arg_int(EventIndex i, std::string_view key) const {
  ArgLookup arg = find_arg(*this, i, key);
  if (!arg.token) return std::nullopt;
  int64_t value = 0;
  if (detail::parse_int_token(arg.text ? std::string_view(*arg.text) : *arg.token, value)) return value;
  return std::nullopt;
}

std::optional<double> Timeline::arg_double(EventIndex i, std::string_view key) const {
  ArgLookup arg = find_arg(*this, i, key);
  if (!arg.token) return std::nullopt;
  std::string text = arg.text ? *arg.text : std::string(*arg.token);
  if (text.empty() || text.front() == '{' || text.front() == '[' || text == "true" || text == "false") {
    return std::nullopt;
  }
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::string> Timeline::arg_string(EventIndex i, std::string_view key) const {
  ArgLookup arg = find_arg(*this, i, key);
  if (arg.text) return std::move(arg.text);
  if (arg.token) return std::string(*arg.token);
  return std::nullopt;
}

}  // namespace ptadvise
