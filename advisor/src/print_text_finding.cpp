// The default layout of a finding in the text report, at most four lines at 80 columns:
//
//   #1 warning[PTA102] sync-in-step: saves ~2.5 ms/step (10.0%)
//       The host syncs with the GPU once per step; GPU idle 2.5 ms/step
//     --> train.py:42 in train_step (aten::item > aten::_local_scalar_dense)
//      = help: Keep values on the GPU; read them (.item(), .cpu()) every N steps
//
// The title carries the saving, the message (the rule's short_message) the cost. A line that would wrap
// is first replaced by a shorter text saying the same (the title without the rule's name, the location
// without the Python function or the outer ops, the short fix); names lose their middle ("…"), numbers
// never do. Only when no shorter text fits (a narrow terminal) does a line wrap.
#include <algorithm>
#include <optional>
#include <vector>

#include "format.h"
#include "text_layout.h"

namespace ptadvise::text {

namespace {

using format::visible;

constexpr size_t kMessageIndent = 4;
constexpr size_t kLocationPrefix = 6;  // "  --> "
constexpr size_t kHelpPrefix = 11;     // "   = help: "

// "a > b > c > d" as "… > c > d", then the innermost op alone.
std::vector<std::string> chain_candidates(const std::vector<std::string>& chain) {
  std::vector<std::string> out;
  for (size_t keep = chain.size(); keep-- > 1;) {
    std::string text = "\u2026";
    for (size_t i = chain.size() - keep; i < chain.size(); ++i) text += " > " + chain[i];
    out.push_back(text);
  }
  if (!chain.empty()) out.push_back(chain.back());
  return out;
}

// Where the finding is, most informative first; empty for a whole-trace finding (the header names the
// file).
std::vector<std::string> location_candidates(const Finding& f) {
  // A job finding's site is the ranks it concerns ("rank 2", "all 4 ranks"), for one collective type or
  // for the job as a whole. Job rules judge ranks, not events: they carry no evidence, which tells them
  // from a per-rank finding folded because every rank has it (its site is an event's, say an annotation).
  if (!f.ranks.empty() && f.evidence.empty() && f.site.op_chain.empty() && !f.site.source &&
      !f.site.detail.empty()) {
    const std::string ranks = visible(f.site.detail);
    if (f.site.op.empty() || f.site.op == "job" || f.site.op == "rank") return {ranks};
    return {visible(f.site.op) + " on " + ranks, ranks};
  }
  std::vector<std::string> sites;
  std::string site = visible(describe_site(Site{f.site.op, f.site.kernel, f.site.op_chain, std::nullopt, f.site.detail}));
  if (site == "(whole trace)" || site == "whole trace") site.clear();
  if (!site.empty()) sites.push_back(site);
  if (f.site.op_chain.size() > 1 && site.find(" > ") != std::string::npos) {
    std::vector<std::string> chain;
    for (const auto& op : f.site.op_chain) chain.push_back(visible(op));
    for (auto& text : chain_candidates(chain)) sites.push_back(std::move(text));
  }
  std::vector<std::string> sources;
  if (f.site.source) {
    const SourceLocation& s = *f.site.source;
    const std::string line = s.line > 0 ? ":" + std::to_string(s.line) : "";
    const std::string file = visible(s.file);
    const size_t slash = file.rfind('/');
    const std::string base = slash == std::string::npos ? file : "\u2026/" + file.substr(slash + 1);
    const std::string function = s.function.empty() ? "" : " in " + visible(s.function);
    for (const std::string& text : {file + line + function, base + line + function, file + line, base + line}) {
      if (std::find(sources.begin(), sources.end(), text) == sources.end()) sources.push_back(text);
    }
  }
  std::vector<std::string> out;
  for (const auto& source : sources) {
    for (const auto& s : sites) out.push_back(source + " (" + s + ")");
  }
  for (const auto& source : sources) out.push_back(source);
  if (sources.empty()) out = sites;
  return out;
}

// The first candidate that fits `room` columns, else the last one with its middle elided when it is a
// name (numbers keep the rest of the text whole: a source line "…/train.py:42" is never elided).
std::string fitting(const std::vector<std::string>& candidates, size_t room, bool may_elide) {
  for (const auto& text : candidates) {
    if (columns(text) <= room) return text;
  }
  return may_elide ? elide_middle(candidates.back(), room) : candidates.back();
}

std::string saving_text(const Finding& f) {
  if (f.saving_ms_per_step <= 0) return "no step time to save";
  return "saves ~" + format::short_number(f.saving_ms_per_step) + " ms/step (" + format::fixed(f.saving_pct, 1) + "%)";
}

}  // namespace

void print_finding_default(const Finding& f, std::ostream& out, const Palette& p, size_t width) {
  // 1: what and what it saves; the rule's name goes first when the line is too narrow for it.
  const std::string rank = "#" + std::to_string(f.rank);
  const std::string severity(to_string(f.severity));
  const std::string id = "[" + visible(f.rule_id) + "]";  // a merged digest's ids and names are untrusted
  const std::string name = visible(f.rule_name);
  const std::string saving = saving_text(f);
  const std::string prefix = p.bold(rank) + " " + p.severity(f.severity) + p.bold(id);
  const size_t prefix_columns = rank.size() + 1 + severity.size() + id.size();
  if (prefix_columns + 1 + columns(name) + 2 + columns(saving) <= width) {
    out << prefix << " " << name << ": " << saving << "\n";
  } else {
    wrapped(out, prefix + ": ", prefix_columns + 2, saving, width, kMessageIndent);
  }
  // 2: what happens and its cost.
  const std::string message = visible(f.short_message.empty() ? f.message : f.short_message);
  wrapped(out, std::string(kMessageIndent, ' '), kMessageIndent, message, width, kMessageIndent);
  // 3: where.
  const std::vector<std::string> where = location_candidates(f);
  const size_t room = width > kLocationPrefix ? width - kLocationPrefix : 1;
  if (!where.empty()) wrapped(out, "  " + p.blue("-->") + " ", kLocationPrefix, fitting(where, room, true), width, kLocationPrefix);
  // 4: how to fix it.
  std::vector<std::string> fixes;
  if (!f.fix.empty()) fixes.push_back(visible(f.fix));
  if (!f.short_fix.empty()) fixes.push_back(visible(f.short_fix));
  if (!fixes.empty()) {
    const size_t help_room = width > kHelpPrefix ? width - kHelpPrefix : 1;
    wrapped(out, "   " + p.blue("=") + " " + p.bold("help") + ": ", kHelpPrefix, fitting(fixes, help_room, false), width,
            kHelpPrefix);
  }
  out << "\n";
}

}  // namespace ptadvise::text
