// Findings: the site, evidence, saving (within the step claims), noise floor, fixes and messages of one
// group, and the ledger gaps it claims.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "evaluator.h"
#include "ledger_text.h"

namespace ptadvise::rule_evaluation {

namespace {

std::string format_number(double value) {
  if (std::isnan(value)) return "n/a";
  char buffer[64];
  double magnitude = std::fabs(value);
  if (magnitude >= 100 || value == std::floor(value)) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else if (magnitude >= 10) {
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
  } else if (magnitude >= 0.1) {
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
  } else {
    // Three significant digits in plain decimals ("0.00008", never "8e-05"), trailing zeros dropped.
    int decimals = std::min(12, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    std::string text = buffer;
    if (text.find('.') != std::string::npos) {
      while (text.back() == '0') text.pop_back();
      if (text.back() == '.') text.pop_back();
    }
    return text;
  }
  return buffer;
}

std::string format_bytes(double value) {
  if (std::isnan(value)) return "n/a";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(value) >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return format_number(value) + " " + units[unit];
}

}  // namespace

std::string Evaluator::track_text(EventIndex i) const {
  uint32_t t = ev_.track[i];
  if (t >= tl_.tracks.size()) return {};
  const Track& track = tl_.tracks[t];
  if (track.kind == TrackKind::Gpu) {
    return "GPU " + std::to_string(track.device) + " stream " + std::to_string(track.stream);
  }
  return "pid " + std::string(tl_.strings.view(track.pid_text)) + " tid " + std::string(tl_.strings.view(track.tid_text));
}

std::string Evaluator::idle_breakdown(size_t top) {
  // The causes of the gaps counted by the rule's first idle metric, largest first.
  for (size_t m = 0; m < rule_->metrics.size(); ++m) {
    if (rule_->metrics[m].kind != MetricKind::Idle) continue;
    double per_cause[kIdleCauseCount] = {};  // by IdleCause: a metric may count gaps of any cause
    for (uint32_t k : gaps_for(m)) per_cause[static_cast<int>(a_.idle[k].cause)] += static_cast<double>(a_.idle[k].duration_ns());
    std::vector<std::pair<double, int>> order;
    for (int c = 0; c < static_cast<int>(kIdleCauseCount); ++c) {
      if (per_cause[c] > 0) order.emplace_back(per_cause[c], c);
    }
    std::sort(order.rbegin(), order.rend());
    std::string text;
    for (size_t n = 0; n < order.size() && n < top; ++n) {
      if (!text.empty()) text += ", ";
      text += std::string(to_string(static_cast<IdleCause>(order[n].second))) + " " +
              format_number(order[n].first / static_cast<double>(steps_) / 1e6) + " ms/step";
    }
    return text.empty() ? "none" : text;
  }
  return "none";
}

Evaluator::ChargedCulprits Evaluator::site_culprits(const CompiledRule& rule, const Group& group, size_t top) {
  ChargedCulprits out;
  size_t m = 0;
  while (m < rule.metrics.size() &&
         (rule.metrics[m].kind != MetricKind::Idle || rule.metrics[m].culprits != Metric::Culprits::Site)) {
    ++m;
  }
  if (m == rule.metrics.size()) return out;
  // Among the group's own events (a culprit outside it, say the CPU op behind a copy, would describe
  // another site): the idle time charged to each. Members are marked in event_mark_, reset below.
  const auto& gaps = gaps_for(m);  // before event_mark_ is set: idle_gaps uses it too
  if (event_mark_.size() != ev_.size()) event_mark_.assign(ev_.size(), kNone);
  for (uint32_t member = 0; member < group.events.size(); ++member) event_mark_[group.events[member]] = member;
  struct Charge {
    int64_t ns = 0;
    bool charged = false;
  };
  std::vector<Charge> charges(group.events.size());
  std::vector<EventIndex> charged;  // in the order first charged
  for (uint32_t k : gaps) {
    const EventIndex culprit = a_.idle[k].culprit;
    if (culprit == kNone || culprit >= ev_.size() || event_mark_[culprit] == kNone) continue;
    Charge& charge = charges[event_mark_[culprit]];
    if (!charge.charged) {
      charge.charged = true;
      charged.push_back(culprit);
    }
    charge.ns += a_.idle[k].duration_ns();
  }
  std::vector<std::pair<int64_t, EventIndex>> order;
  order.reserve(charged.size());
  for (EventIndex e : charged) order.emplace_back(charges[event_mark_[e]].ns, e);
  for (EventIndex e : group.events) event_mark_[e] = kNone;
  auto earlier = [this](EventIndex x, EventIndex y) {
    if (ev_.ts_ns[x] != ev_.ts_ns[y]) return ev_.ts_ns[x] < ev_.ts_ns[y];
    return ev_.track[x] != ev_.track[y] ? ev_.track[x] < ev_.track[y] : x < y;
  };
  // The site: the name charged the most, as the message counts them (ties by name); its earliest event.
  // Summed per interned name first, so names are compared once per name rather than once per event.
  std::unordered_map<StringId, std::pair<int64_t, EventIndex>> by_name_id;
  for (const auto& [ns, event] : order) {
    auto& [total, first] = by_name_id.try_emplace(ev_.name[event], 0, event).first->second;
    total += ns;
    if (earlier(event, first)) first = event;
  }
  std::map<std::string_view, std::pair<int64_t, EventIndex>> by_name;
  for (const auto& [name, entry] : by_name_id) {
    auto [it, inserted] = by_name.try_emplace(tl_.strings.view(name), entry);
    if (inserted) continue;
    it->second.first += entry.first;  // two ids of one text (names not interned)
    if (earlier(entry.second, it->second.second)) it->second.second = entry.second;
  }
  int64_t most = 0;
  for (const auto& [name, entry] : by_name) {
    if (entry.first > most) {
      most = entry.first;
      out.site = entry.second;
    }
  }
  // To show: the site's own name first, then the others; each most charged first, equal charges by time.
  const StringId site_name = out.site != kNone ? ev_.name[out.site] : StringId{0};
  auto is_site = [&](EventIndex e) { return out.site != kNone && ev_.name[e] == site_name; };
  const size_t shown = std::min(top, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
                    [&](const auto& x, const auto& y) {
                      if (is_site(x.second) != is_site(y.second)) return is_site(x.second);
                      if (x.first != y.first) return x.first > y.first;
                      return earlier(x.second, y.second);
                    });
  for (size_t n = 0; n < order.size() && n < top; ++n) out.shown.push_back(order[n].second);
  return out;
}

std::string Evaluator::idle_culprits(size_t top) {
  for (size_t m = 0; m < rule_->metrics.size(); ++m) {
    if (rule_->metrics[m].kind != MetricKind::Idle) continue;
    return culprit_breakdown(a_, gaps_for(m), static_cast<double>(steps_), top, &format_number);
  }
  return "none";
}

// `brief` renders a short_message: names longer than kBriefName lose their middle (numbers never do)
// and the idle causes and culprits name only the largest one.
std::string Evaluator::render(const Template& parts, const Site& site, bool brief) {
  constexpr size_t kBriefName = 32;
  auto name = [&](const std::string& text) { return brief ? elide_middle(text, kBriefName) : text; };
  std::string out;
  for (const auto& part : parts) {
    switch (part.kind) {
      case TemplatePart::Kind::Literal: out += part.literal; break;
      case TemplatePart::Kind::Metric: {
        double v = value(part.metric);
        out += part.as_bytes ? format_bytes(v) : format_number(v);
        break;
      }
      case TemplatePart::Kind::SiteOp: out += site.op.empty() ? "(unknown op)" : name(site.op); break;
      case TemplatePart::Kind::SiteKernel: out += name(site.kernel); break;
      case TemplatePart::Kind::SiteName: out += name(site.detail); break;
      case TemplatePart::Kind::SiteSource:
        if (site.source) {
          out += site.source->file + ":" + std::to_string(site.source->line);
        } else if (out.size() >= 4 && out.compare(out.size() - 4, 4, " at ") == 0) {
          out.erase(out.size() - 4);  // "… at {site.source}" without a stack: say nothing rather than "at (no Python stack)"
        } else {
          out += "(no Python stack)";
        }
        break;
      case TemplatePart::Kind::SiteChain: {
        std::string chain;
        for (const auto& op : site.op_chain) chain += (chain.empty() ? "" : " > ") + op;
        out += name(chain);
        break;
      }
      case TemplatePart::Kind::Idle: out += idle_breakdown(brief ? 1 : 3); break;
      case TemplatePart::Kind::IdleCulprits: out += idle_culprits(brief ? 1 : 3); break;
    }
  }
  // "1 times per step" reads as a mistake.
  for (size_t at = out.find("1 times per"); at != std::string::npos; at = out.find("1 times per", at + 1)) {
    if (at == 0 || (!std::isdigit(static_cast<unsigned char>(out[at - 1])) && out[at - 1] != '.')) out.replace(at, 7, "once");
  }
  return out;
}

Finding Evaluator::make_finding(const RuleInfo& info, const CompiledRule& rule, const EvaluateOptions& options) {
  const Group& group = groups_[group_];
  Finding finding = finding_of(info);
  if (auto found = options.severities.find(info.id); found != options.severities.end()) finding.severity = found->second;
  finding.trace_path = tl_.path;
  finding.trace_rank = tl_.rank;

  // Grouped rules describe the site of their events; whole-trace rules have no single site. The group's
  // first event in time stands for it, unless the rule charges idle time to culprits at the site: then the
  // culprit charged the most (the op the message names first), so the location points where the time went.
  const ChargedCulprits culprits = site_culprits(rule, group, 3);
  const EventIndex representative = culprits.site != kNone ? culprits.site : group.events.front();
  if (!rule.group_by.empty()) {
    EventIndex op = op_of(representative);
    if (op != kNone) finding.site.op = std::string(tl_.name(op));
    if (is_gpu_side(ev_.kind[representative])) finding.site.kernel = std::string(tl_.name(representative));
    // CPU ops only: annotations such as ProfilerStep#N change from step to step and recording to recording.
    for (EventIndex e : a_.op_chain(representative)) {
      if (ev_.kind[e] == EventKind::CpuOp) finding.site.op_chain.emplace_back(tl_.name(e));
    }
    finding.site.source = a_.user_source(representative);
    finding.site.detail = std::string(tl_.name(representative));
  } else {
    finding.site.detail = "whole trace";
  }
  if (std::find(rule.group_by.begin(), rule.group_by.end(), SiteKey::Bytes) != rule.group_by.end()) {
    if (auto bytes = tl_.arg_double(representative, "bytes")) finding.site.detail += ", " + format_bytes(*bytes);
  }

  // Evidence: the longest occurrences, so they are easy to spot in a viewer; for a rule that charges idle
  // time to culprits at the site, the events charged the most (a long annotation around the whole
  // forward pass is long, but the GPU did not wait for it).
  std::vector<EventIndex> shown = culprits.shown;
  if (shown.empty()) {
    shown = group.events;
    const size_t top = std::min<size_t>(3, shown.size());
    std::partial_sort(shown.begin(), shown.begin() + static_cast<std::ptrdiff_t>(top), shown.end(),
                      [&](EventIndex x, EventIndex y) {
                        // Equal lengths: the earliest (the group is in time order), not the first in the file.
                        if (ev_.dur_ns[x] != ev_.dur_ns[y]) return ev_.dur_ns[x] > ev_.dur_ns[y];
                        return ev_.ts_ns[x] != ev_.ts_ns[y] ? ev_.ts_ns[x] < ev_.ts_ns[y] : x < y;
                      });
    shown.resize(top);
  }
  const size_t keep = shown.size();
  for (size_t k = 0; k < keep; ++k) {
    EventIndex e = shown[k];
    Evidence evidence;
    evidence.step = step(e);
    if (evidence.step < a_.steps.size()) evidence.step_number = a_.steps[evidence.step].number;
    evidence.ts_ns = ev_.ts_ns[e];
    evidence.file_ts_ns = tl_.file_origin_ns + ev_.ts_ns[e];
    evidence.dur_ns = ev_.dur_ns[e];
    evidence.event = std::string(tl_.name(e));
    evidence.track = track_text(e);
    finding.evidence.push_back(std::move(evidence));
  }

  auto metric_named = [&](std::string_view name) {
    for (size_t m = 0; m < rule.metrics.size(); ++m) {
      if (rule.metrics[m].name == name) return value(m);
    }
    return 0.0;
  };
  finding.count_per_step = metric_named("count");
  finding.time_ms_per_step = metric_named("time_ms");
  finding.steps_present_pct = metric_named("steps_present_pct");

  // Time terms count only GPU ops no earlier finding claimed, within the GPU bound and the step that are
  // left (step_claims.h); what is asked for beyond that is said in the method.
  double gpu_ms = 0, other_ms = 0;
  std::vector<const std::vector<EventIndex>*> gpu_events;
  for (const auto& term : rule.saving) {
    if (term.when && !holds(*term.when)) continue;
    if (rule.metrics[term.metric].kind == MetricKind::Time) {
      const auto& events = events_of(rule.metrics[term.metric]);
      StepClaims::Time time = step_claims_.time_of(events, static_cast<double>(steps_));
      gpu_ms += term.factor * time.gpu_ms;
      other_ms += term.factor * time.host_ms;
      if (term.factor != 0) gpu_events.push_back(&events);
      continue;
    }
    double v = value(term.metric);
    if (!std::isnan(v)) other_ms += term.factor * v;
  }
  const StepClaims::Grant granted = step_claims_.grant(gpu_ms, other_ms);
  const StepClaims::Grant alone = step_claims_.grant_alone(gpu_ms, other_ms);
  finding.saving_ms_per_step = granted.total_ms;
  finding.saving_pct = step_period_ms_ > 0 ? finding.saving_ms_per_step / step_period_ms_ * 100.0 : 0.0;
  finding.saving_method = rule.saving_method;
  if (granted.total_ms + 5e-4 < std::max(0.0, gpu_ms + other_ms)) {
    finding.saving_method += " " + limited_note(gpu_ms, other_ms, granted);
  }
  finding.confidence = rule.confidence;
  for (size_t t = 0; t < rule.transform.steps.size(); ++t) {
    finding.fixes.push_back({rule.transform.steps[t], transform_events(rule, rule.transform.selections[t], group),
                             info.id, rule.transform.method});
  }
  // The noise floor: a rule that estimates a saving reports only savings above both minimums (rules
  // whose saving is 0 by design report facts, never fail a gate, and are exempt). Measured on what the
  // finding is worth on its own: whether a cause is reported must not depend on which rule took the GPU
  // bound or the step first. One whose share, after earlier findings, is below the floor is reported with
  // that share and fails no gate (ranking.cpp).
  below_noise_floor_ = false;
  const bool estimates_saving =
      std::any_of(rule.saving.begin(), rule.saving.end(), [](const SavingTerm& t) { return t.factor != 0; });
  if (estimates_saving) {
    double min_ms = 0, min_pct = 0;
    for (size_t t = 0; t < rule.thresholds.size(); ++t) {
      if (rule.thresholds[t].name == kMinSavingMs) min_ms = thresholds_[t];
      if (rule.thresholds[t].name == kMinSavingPct) min_pct = thresholds_[t];
    }
    finding.noise_floor_ms = std::max(min_ms, min_pct / 100.0 * step_period_ms_);
    const double alone_pct = step_period_ms_ > 0 ? alone.total_ms / step_period_ms_ * 100.0 : 0.0;
    if (alone.total_ms < min_ms || alone_pct < min_pct) {
      below_noise_floor_ = true;
      return finding;  // claims nothing
    }
    if (finding.saving_ms_per_step < finding.noise_floor_ms) {
      finding.saving_method += " Earlier findings claimed what it would save on its own (no time is counted "
                               "twice): it is reported, and fails no gate until they are fixed.";
    }
  }
  finding.message = render(rule.message, finding.site);
  if (!rule.short_message.empty()) finding.short_message = render(rule.short_message, finding.site, /*brief=*/true);

  step_claims_.commit(gpu_events, granted);
  // Claim the ledger gaps this finding counted, so later rules cannot count them again.
  for (size_t m = 0; m < rule.metrics.size(); ++m) {
    const Metric& metric = rule.metrics[m];
    if (metric.kind != MetricKind::Idle || metric.include_claimed) continue;
    for (uint32_t k : gaps_for(m)) {
      if (!claimed_[k]) {
        claimed_[k] = 1;
        finding.idle_gaps.push_back(k);
      }
    }
  }
  std::sort(finding.idle_gaps.begin(), finding.idle_gaps.end());
  return finding;
}

std::string Evaluator::limited_note(double gpu_ms, double other_ms, const StepClaims::Grant& granted) const {
  std::string note = "Limited to " + format_number(granted.total_ms) + " of " + format_number(gpu_ms + other_ms) +
                     " ms per step:";
  if (granted.gpu_ms + 5e-4 < gpu_ms) {
    note += " faster GPU work shortens this step by at most " + format_number(a_.gpu_bound_ns_per_step() / 1e6) +
            " ms (the rest of the step is the host's own work), shared with earlier findings;";
  }
  if (granted.total_ms + 5e-4 < granted.gpu_ms + other_ms) note += " earlier findings claimed the rest of the step;";
  note.back() = '.';
  return note;
}

std::vector<EventIndex> Evaluator::transform_events(const CompiledRule& rule, const std::string& selection, const Group& group) {
  for (size_t s = 0; !selection.empty() && s < rule.selections.size(); ++s) {
    if (rule.selections[s].name == selection) return selected_[s];
  }
  return group.events;
}

}  // namespace ptadvise::rule_evaluation
