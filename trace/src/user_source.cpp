// Where an event comes from in the user's code: the first frame outside libraries, from Python frames,
// `Call stack` args and `Python parent id` links (Analysis::user_source, docs/ANALYSIS.md).
#include <cctype>
#include <charconv>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "analysis_detail.h"
#include "ptadvise/analysis.h"

namespace ptadvise {

std::optional<SourceLocation> parse_python_frame(std::string_view frame) {
  while (!frame.empty() && std::isspace(static_cast<unsigned char>(frame.front()))) frame.remove_prefix(1);
  while (!frame.empty() && std::isspace(static_cast<unsigned char>(frame.back()))) frame.remove_suffix(1);
  // "file.py(42): function", or "file.py(42)" without a function.
  size_t close = frame.find("): ");
  std::string_view function;
  if (close != std::string_view::npos) {
    function = frame.substr(close + 3);
  } else if (!frame.empty() && frame.back() == ')') {
    close = frame.size() - 1;
  } else {
    return std::nullopt;
  }
  size_t open = frame.rfind('(', close);
  if (open == std::string_view::npos || open == 0 || open + 1 >= close) return std::nullopt;
  std::string_view digits = frame.substr(open + 1, close - open - 1);
  int line = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), line);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  SourceLocation location;
  location.file = std::string(frame.substr(0, open));
  location.line = line;
  location.function = std::string(function);
  return location;
}

bool is_library_frame(std::string_view file) {
  if (file.empty() || file.front() == '<') return true;  // <built-in ...>, <frozen ...>, <string>
  return file.starts_with("torch/") || file.find("/torch/") != std::string_view::npos ||
         file.find("site-packages/") != std::string_view::npos ||
         file.find("dist-packages/") != std::string_view::npos ||
         file.find("/lib/python3") != std::string_view::npos || file.starts_with("lib/python3");
}

namespace {

std::optional<SourceLocation> user_frame(std::string_view frame) {
  auto location = parse_python_frame(frame);
  if (!location || is_library_frame(location->file)) return std::nullopt;
  return location;
}

// `Call stack` lists frames innermost first, separated by ";" (older writers add "\r\n" after it).
std::optional<SourceLocation> first_user_frame_of_stack(std::string_view stack) {
  while (!stack.empty()) {
    size_t cut = stack.find(';');
    std::string_view frame = stack.substr(0, cut);
    if (auto location = user_frame(frame)) return location;
    if (cut == std::string_view::npos) break;
    stack.remove_prefix(cut + 1);
  }
  return std::nullopt;
}

// The location an event names by itself: a python_function's own frame, else the first user frame of its
// `Call stack` (a frame recorded as a range by a capture without the Python tracer carries its caller's stack).
std::optional<SourceLocation> own_source(const Timeline& timeline, EventIndex e) {
  const Events& events = timeline.events;
  const EventKind kind = events.kind[e];
  if (kind == EventKind::PythonFunction) {
    if (auto location = user_frame(timeline.name(e))) return location;
  } else if (kind != EventKind::CpuOp && kind != EventKind::UserAnnotation) {
    return std::nullopt;
  }
  if (events.args_length[e] == 0) return std::nullopt;
  auto stack = timeline.arg_string(e, "Call stack");
  if (!stack || stack->empty()) return std::nullopt;
  return first_user_frame_of_stack(*stack);
}

// The first user frame up the `Python parent id` links from an outermost python_function, or kNone.
EventIndex user_frame_through_parent_ids(const Analysis& analysis, EventIndex outermost_python) {
  const Timeline* timeline = analysis.timeline;
  const Events& events = timeline->events;
  auto& python_by_id = analysis.python_by_id;
  if (!python_by_id) {
    python_by_id.emplace();
    for (EventIndex e = 0; e < events.size(); ++e) {
      if (events.kind[e] != EventKind::PythonFunction) continue;
      if (auto id = timeline->arg_int(e, "Python id")) python_by_id->emplace(*id, e);
    }
  }
  EventIndex frame = outermost_python;
  for (int guard = 0; guard < 10000; ++guard) {
    auto parent_id = timeline->arg_int(frame, "Python parent id");
    if (!parent_id) break;
    auto it = python_by_id->find(*parent_id);
    if (it == python_by_id->end() || it->second == frame) break;
    frame = it->second;
    if (user_frame(timeline->name(frame))) return frame;
  }
  return kNone;
}

}  // namespace

std::optional<SourceLocation> Analysis::user_source(EventIndex i) const {
  const EventIndex named_by = user_source_event(i);
  if (named_by == kNone) return std::nullopt;
  return own_source(*timeline, named_by);
}

EventIndex Analysis::user_source_event(EventIndex i) const {
  const Events& events = timeline->events;
  EventIndex start = detail::host_side(*this, i);
  if (start == kNone) return kNone;
  std::lock_guard lock(*source_lock);
  // The innermost event naming a location wins; the outermost python_function is where `Python parent id`
  // links go on when none does.
  const auto [from, python] = detail::derive_down(
      events, start, source_chain, SourceChain{kNone, kNone}, [&](EventIndex e, SourceChain above) {
        if (above.outermost_python == kNone && events.kind[e] == EventKind::PythonFunction) above.outermost_python = e;
        if (own_source(*timeline, e)) above.innermost_source = e;
        return above;
      });
  if (from != kNone) return from;
  if (python == kNone) return kNone;
  // The nesting ended (frames cut by the trace window): continue through `Python parent id` to a
  // python_function whose own frame is a user frame (own_source reads it as such).
  auto [found, inserted] = source_parent_frame.try_emplace(python, kNone);
  if (inserted) found->second = user_frame_through_parent_ids(*this, python);
  return found->second;
}

}  // namespace ptadvise
