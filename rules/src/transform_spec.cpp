#include "transform_spec.h"

#include <charconv>
#include <cstdio>
#include <cmath>

namespace ptadvise {
namespace {

std::optional<double> parse_number(const std::string& text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<TransformError> parse_step(const YAML::Node& item, whatif::TransformSpec& spec, std::string& selection) {
  const std::string key = "transform.apply";
  if (!item.IsMap() || item.size() != 1) {
    return TransformError{item.Mark(), key, "expected one primitive per item: remove, scale, make_async, fuse, overlap, background or batch"};
  }
  const auto entry = *item.begin();
  if (!entry.first.IsScalar()) return TransformError{item.Mark(), key, "expected a primitive name"};
  const std::string name = entry.first.Scalar();
  auto primitive = whatif::parse_primitive(name);
  if (!primitive) {
    return TransformError{entry.first.Mark(), key,
                          "unknown primitive '" + name + "'; expected remove, scale, make_async, fuse, overlap, background or batch"};
  }
  spec = {};
  spec.primitive = *primitive;
  if (spec.primitive == whatif::Primitive::Batch) spec.factor = 0;  // from the memory headroom unless given
  const YAML::Node params = entry.second;
  const std::string where = key + "." + name;
  if (params.IsNull()) return std::nullopt;
  if (!params.IsMap()) return TransformError{params.Mark(), where, "expected a mapping of parameters (or {})"};
  bool has_factor = false;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!it->first.IsScalar() || !it->second.IsScalar()) {
      return TransformError{it->first.Mark(), where, "expected plain `parameter: value` pairs"};
    }
    const std::string param = it->first.Scalar();
    const std::string value = it->second.Scalar();
    const std::string at = where + "." + param;
    auto number = parse_number(value);
    if (param == "select") {
      selection = value;
    } else if (param == "scope") {
      if (value != "event" && value != "outer_op") return TransformError{it->second.Mark(), at, "expected event or outer_op"};
      spec.scope = value == "outer_op" ? whatif::TransformSpec::Scope::OuterOp : whatif::TransformSpec::Scope::Event;
    } else if (param == "touches") {
      if (value != "host" && value != "gpu" && value != "both") return TransformError{it->second.Mark(), at, "expected host, gpu or both"};
      spec.host = value != "gpu";
      spec.gpu = value != "host";
    } else if (param == "table" && spec.primitive == whatif::Primitive::Scale) {
      auto table = whatif::parse_scale_table(value);
      if (!table) return TransformError{it->second.Mark(), at, "expected tensor_cores or pinned_copy, got '" + value + "'"};
      spec.table = *table;
    } else if (param == "factor" && spec.primitive == whatif::Primitive::Scale) {
      // Past 1000x a slowed-down op's time could overflow int64 nanoseconds in the replay.
      if (!number || *number < 0 || *number > 1000) {
        return TransformError{it->second.Mark(), at, "expected a number from 0 to 1000, got '" + value + "'"};
      }
      spec.factor = *number;
      has_factor = true;
    } else if ((param == "workers" || param == "prefetch") && spec.primitive == whatif::Primitive::Background) {
      if (!number || *number < (param == "workers" ? 1 : 0) || *number > 1024 || *number != std::floor(*number)) {
        return TransformError{it->second.Mark(), at, "expected a whole number" + std::string(param == "workers" ? " >= 1" : " >= 0")};
      }
      (param == "workers" ? spec.workers : spec.prefetch) = static_cast<int>(*number);
    } else if (param == "factor" && spec.primitive == whatif::Primitive::Batch) {
      if (!number || *number < 1 || *number > 1024) {
        return TransformError{it->second.Mark(), at, "expected a number from 1 to 1024, got '" + value + "'"};
      }
      spec.factor = *number;
    } else if (param == "memory_target" && spec.primitive == whatif::Primitive::Batch) {
      if (!number || *number <= 0 || *number > 1) {
        return TransformError{it->second.Mark(), at, "expected a share of GPU memory above 0 and at most 1, got '" + value + "'"};
      }
      spec.memory_target = *number;
    } else if (param == "host_time" && spec.primitive == whatif::Primitive::Background) {
      if (value != "events" && value != "charged_idle") {
        return TransformError{it->second.Mark(), at, "expected events or charged_idle, got '" + value + "'"};
      }
      spec.host_time = value == "charged_idle" ? whatif::TransformSpec::HostTime::ChargedIdle
                                               : whatif::TransformSpec::HostTime::Events;
    } else {
      return TransformError{it->first.Mark(), at, "unknown parameter for " + name +
                                                       " (select, scope, touches; scale: table or factor; background: "
                                                       "workers, prefetch, host_time; batch: factor or memory_target)"};
    }
  }
  if (spec.primitive == whatif::Primitive::Batch && spec.factor > 0 && params["memory_target"]) {
    return TransformError{params.Mark(), where, "expected at most one of factor or memory_target"};
  }
  if (spec.primitive == whatif::Primitive::Scale && has_factor == (spec.table != whatif::ScaleTable::None)) {
    return TransformError{params.Mark(), where, "expected exactly one of table or factor"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<TransformError> parse_transform(const YAML::Node& node, RuleTransform& out) {
  if (!node.IsMap()) return TransformError{node.Mark(), "transform", "expected a mapping with apply and method"};
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    if (key != "apply" && key != "method") {
      return TransformError{it->first.Mark(), "transform." + key, "unknown key; expected one of apply, method"};
    }
  }
  const YAML::Node apply = node["apply"];
  const YAML::Node method = node["method"];
  if (!apply) return TransformError{node.Mark(), "transform.apply", "missing required key"};
  if (!method || !method.IsScalar() || method.Scalar().find_first_not_of(" \t\r\n") == std::string::npos) {
    return TransformError{method ? method.Mark() : node.Mark(), "transform.method", "expected a non-empty string"};
  }
  if (!apply.IsSequence() || apply.size() == 0) {
    return TransformError{apply.Mark(), "transform.apply", "expected a non-empty list of primitives"};
  }
  out = {};
  for (const auto& item : apply) {
    whatif::TransformSpec spec;
    std::string selection;
    if (auto error = parse_step(item, spec, selection)) return error;
    out.steps.push_back(spec);
    out.selections.push_back(selection);
  }
  out.method = method.Scalar();
  while (!out.method.empty() && (out.method.back() == '\n' || out.method.back() == ' ')) out.method.pop_back();
  return std::nullopt;
}

std::string describe_transform(const RuleTransform& transform) {
  std::string text;
  for (const auto& spec : transform.steps) {
    if (!text.empty()) text += ", ";
    text += whatif::to_string(spec.primitive);
    std::string detail;
    if (spec.primitive == whatif::Primitive::Scale) {
      if (spec.table == whatif::ScaleTable::TensorCores) detail = "tensor_cores table";
      else if (spec.table == whatif::ScaleTable::PinnedCopy) detail = "pinned_copy table";
      else {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "x%g", spec.factor);
        detail = buffer;
      }
    } else if (spec.primitive == whatif::Primitive::Batch) {
      char buffer[96];
      if (spec.factor > 0) std::snprintf(buffer, sizeof buffer, "x%g", spec.factor);
      else std::snprintf(buffer, sizeof buffer, "factor from the memory headroom, up to %g%% of the GPU's memory", spec.memory_target * 100);
      detail = buffer;
    } else if (spec.primitive == whatif::Primitive::Background) {
      detail = std::to_string(spec.workers) + " workers, " + std::to_string(spec.prefetch) + " batches prefetched each";
      if (spec.host_time == whatif::TransformSpec::HostTime::ChargedIdle) detail += ", the host time of the charged idle";
    }
    if (!spec.host) detail += std::string(detail.empty() ? "" : ", ") + "GPU work only";
    if (!spec.gpu) detail += std::string(detail.empty() ? "" : ", ") + "host time only";
    if (!detail.empty()) text += " (" + detail + ")";
  }
  return text;
}

}  // namespace ptadvise
