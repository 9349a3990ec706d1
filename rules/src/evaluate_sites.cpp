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

namespace {

// The texts of site keys, each given an id the first time it is seen: equal ids, equal texts.
class KeyTexts {
 public:
  uint32_t id_of(std::string text) {
    return ids_.try_emplace(std::move(text), static_cast<uint32_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace

std::vector<Group> Evaluator::make_groups(const CompiledRule& rule) const {
  const auto& events = selected_[rule.primary];
  if (events.empty()) return {};
  if (rule.group_by.empty()) return {Group{events}};
  // An event's key is the text of each of the rule's site keys. Most events share their texts with many
  // others, so each text is built once for what decides it (a name, the event naming the source) and the
  // events are grouped on the texts' ids.
  KeyTexts texts;
  const uint32_t empty = texts.id_of(std::string());
  std::vector<uint32_t> text_of_name(tl_.strings.size(), kNone);  // by StringId
  auto name_text = [&](EventIndex e) {
    uint32_t& id = text_of_name[ev_.name[e]];
    if (id == kNone) id = texts.id_of(std::string(tl_.name(e)));
    return id;
  };
  std::unordered_map<EventIndex, uint32_t> text_of_source;  // by the event naming the source
  EventIndex last_source = kNone;
  uint32_t last_source_text = empty;
  auto key_text = [&](EventIndex i, SiteKey key) -> uint32_t {
    switch (key) {
      case SiteKey::Op: {
        EventIndex op = op_of(i);
        return op == kNone ? empty : name_text(op);
      }
      case SiteKey::Kernel: return is_gpu_side(ev_.kind[i]) ? name_text(i) : empty;
      case SiteKey::Name: return name_text(i);
      case SiteKey::Source: {
        const EventIndex named_by = a_.user_source_event(i);
        if (named_by == kNone) return empty;
        if (named_by != last_source) {
          auto [it, inserted] = text_of_source.try_emplace(named_by, empty);
          if (inserted) it->second = texts.id_of(source_text(i));
          last_source = named_by;
          last_source_text = it->second;
        }
        return last_source_text;
      }
      case SiteKey::OpChain:
      case SiteKey::Bytes: break;
    }
    return texts.id_of(site_key(i, key));
  };
  // Equal ids are equal texts, so the ids alone tell the groups apart: one key by its id, several by
  // their ids side by side (4 bytes each).
  std::vector<Group> groups;
  std::vector<uint32_t> group_of_single(1, kNone);
  std::unordered_map<std::string, size_t> group_of_ids;
  std::string ids;
  for (EventIndex e : events) {
    size_t group = 0;
    if (rule.group_by.size() == 1) {
      const uint32_t id = key_text(e, rule.group_by.front());
      if (id >= group_of_single.size()) group_of_single.resize(id + 1, kNone);
      if (group_of_single[id] == kNone) {
        group_of_single[id] = static_cast<uint32_t>(groups.size());
        groups.emplace_back();
      }
      group = group_of_single[id];
    } else {
      ids.clear();
      for (SiteKey k : rule.group_by) {
        const uint32_t id = key_text(e, k);
        ids.append(reinterpret_cast<const char*>(&id), sizeof id);
      }
      auto [found, inserted] = group_of_ids.try_emplace(ids, groups.size());
      if (inserted) groups.emplace_back();
      group = found->second;
    }
    groups[group].events.push_back(e);
  }
  // Each group in time order, whatever order the file wrote its events in: its first event (the site's
  // representative) and its evidence are then the same for the same trace written another way. Sorted with
  // the fields compared beside each event, not looked up per comparison.
  struct Timed {
    int64_t ts_ns, dur_ns;
    uint32_t track;
    EventIndex event;
  };
  auto before = [](const Timed& a, const Timed& b) {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    if (a.track != b.track) return a.track < b.track;
    if (a.dur_ns != b.dur_ns) return a.dur_ns > b.dur_ns;
    return a.event < b.event;
  };
  std::vector<Timed> timed;
  for (Group& group : groups) {
    timed.clear();
    for (EventIndex e : group.events) timed.push_back({ev_.ts_ns[e], ev_.dur_ns[e], ev_.track[e], e});
    if (std::is_sorted(timed.begin(), timed.end(), before)) continue;
    std::sort(timed.begin(), timed.end(), before);
    for (size_t k = 0; k < timed.size(); ++k) group.events[k] = timed[k].event;
  }
  return groups;
}

}  // namespace ptadvise::rule_evaluation
