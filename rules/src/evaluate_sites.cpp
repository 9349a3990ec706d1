// Sites (docs/RULE_LANGUAGE.md "Grouping by site"): the key a rule's `group_by` puts an event under (its op,
// op chain, kernel, name, source or size), and the groups of the primary selection's events by that key.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "evaluator.h"

namespace ptadvise::rule_evaluation {

EventIndex Evaluator::op_of(EventIndex i) const {
  EventKind kind = ev_.kind[i];
  if (is_gpu_side(kind)) return a_.cpu_op_of(i);
  if (kind == EventKind::Runtime || kind == EventKind::Driver) {
    // A call made straight from Python (torch.cuda.synchronize()) has no CPU op: it is its own site.
    EventIndex op = a_.cpu_op_of(i);
    return op != kNone ? op : i;
  }
  return i;
}

std::string Evaluator::source_text(EventIndex i) const {
  auto source = a_.user_source(i);
  if (!source) return {};
  return source->file + ":" + std::to_string(source->line);
}

std::string Evaluator::site_key(EventIndex i, SiteKey key) const {
  switch (key) {
    case SiteKey::Op: {
      EventIndex op = op_of(i);
      return op == kNone ? std::string() : std::string(tl_.name(op));
    }
    case SiteKey::OpChain: {
      std::string chain;
      for (EventIndex e : a_.op_chain(i)) {
        if (ev_.kind[e] == EventKind::CpuOp) chain += std::string(tl_.name(e)) + " > ";
      }
      return chain;
    }
    case SiteKey::Kernel: return is_gpu_side(ev_.kind[i]) ? std::string(tl_.name(i)) : std::string();
    case SiteKey::Name: return std::string(tl_.name(i));
    case SiteKey::Source: return source_text(i);
    case SiteKey::Bytes: {
      auto bytes = tl_.arg_int(i, "bytes");
      return bytes ? std::to_string(*bytes) : std::string();
    }
  }
  return {};
}

std::vector<Group> Evaluator::make_groups(const CompiledRule& rule) const {
  const auto& events = selected_[rule.primary];
  if (events.empty()) return {};
  if (rule.group_by.empty()) return {Group{events}};
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;
  for (EventIndex e : events) {
    std::string key;
    for (SiteKey k : rule.group_by) {
      key += site_key(e, k);
      key += '\x1f';
    }
    auto [it, inserted] = index.emplace(std::move(key), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].events.push_back(e);
  }
  // Each group in time order, whatever order the file wrote its events in: its first event (the site's
  // representative) and its evidence are then the same for the same trace written another way.
  auto before = [this](EventIndex a, EventIndex b) {
    if (ev_.ts_ns[a] != ev_.ts_ns[b]) return ev_.ts_ns[a] < ev_.ts_ns[b];
    if (ev_.track[a] != ev_.track[b]) return ev_.track[a] < ev_.track[b];
    if (ev_.dur_ns[a] != ev_.dur_ns[b]) return ev_.dur_ns[a] > ev_.dur_ns[b];
    return a < b;
  };
  for (Group& group : groups) {
    if (!std::is_sorted(group.events.begin(), group.events.end(), before)) {
      std::sort(group.events.begin(), group.events.end(), before);
    }
  }
  return groups;
}

}  // namespace ptadvise::rule_evaluation
