// `ptadvise diff` printers: text for terminals, Markdown for pull-request comments, JSON for tools.
#include <ostream>

#include "ptadvise/bad_alloc_shield.h"
#include "format.h"
#include "text_layout.h"
#include "json_doc.h"
#include "ptadvise/schema_versions.h"
#include "ptadvise/advisor.h"

namespace ptadvise {

namespace {

using format::fixed;
using format::visible;
using jsondoc::Json;
using jsondoc::number;

std::string signed_ms(double ms) { return (ms >= 0 ? "+" : "") + fixed(ms, 3) + " ms"; }

std::string signed_pct(double pct) { return (pct >= 0 ? "+" : "") + fixed(pct, 1) + "%"; }

// "  +3.156 ms  NAME  (0.000 -> 3.156 ms)" in `width` columns: a long kernel name loses its middle, the
// numbers stay whole.
void print_changes_text(const char* title, const std::vector<TimeChange>& changes, std::ostream& out, size_t width) {
  out << title << (changes.empty() ? ": no change\n" : ":\n");
  for (const auto& c : changes) {
    const std::string head = "  " + signed_ms(c.delta_ms()) + "  ";
    const std::string tail = "  (" + fixed(c.base_ms_per_step, 3) + " -> " + fixed(c.new_ms_per_step, 3) + " ms)";
    const size_t fixed_columns = text::columns(head) + text::columns(tail);
    const size_t room = width > fixed_columns + 16 ? width - fixed_columns : 16;
    const std::string name = text::elide_middle(visible(c.name), room);
    if (text::columns(head + name + tail) <= width) {
      out << head << name << tail << "\n";
    } else {  // a terminal too narrow even for the numbers
      text::wrapped(out, head, text::columns(head), name + tail, width, 4);
    }
  }
}

void print_findings_text(const char* title, char sign, const std::vector<Finding>& findings, std::ostream& out,
                         size_t width) {
  out << title << " (" << findings.size() << ")" << (findings.empty() ? "\n" : ":\n");
  for (const auto& f : findings) {
    text::wrapped(out, std::string("  ") + sign + " ", 4,
                  f.rule_id + " " + f.rule_name + ": " + visible(describe_site(f.site)) + " (~" +
                      format::short_number(f.saving_ms_per_step) + " ms/step)",
                  width, 6);
  }
}

Json changes_document(const std::vector<TimeChange>& changes) {
  Json list = Json::array();
  for (const auto& c : changes) {
    list.push_back({{"name", c.name},
                    {"base_ms_per_step", number(c.base_ms_per_step, 3)},
                    {"new_ms_per_step", number(c.new_ms_per_step, 3)},
                    {"delta_ms", number(c.delta_ms(), 3)}});
  }
  return list;
}

Json findings_document(const std::vector<Finding>& findings) {
  Json list = Json::array();
  for (const auto& f : findings) {
    list.push_back({{"fingerprint", f.fingerprint},
                    {"rule_id", f.rule_id},
                    {"rule_name", f.rule_name},
                    {"severity", to_string(f.severity)},
                    {"site", describe_site(f.site)},
                    {"saving_ms_per_step", number(f.saving_ms_per_step, 3)}});
  }
  return list;
}

void print_findings_markdown(const char* title, const std::vector<Finding>& findings, std::ostream& out) {
  out << "### " << title << " (" << findings.size() << ")\n\n";
  if (findings.empty()) {
    out << "None.\n\n";
    return;
  }
  out << "| rule | severity | where | saving per step |\n|---|---|---|---:|\n";
  for (const auto& f : findings) {
    out << "| " << format::md_code(f.rule_id) << " " << format::md_cell(f.rule_name) << " | " << to_string(f.severity)
        << " | " << format::md_code(describe_site(f.site)) << " | " << fixed(f.saving_ms_per_step, 3) << " ms |\n";
  }
  out << "\n";
}

void print_changes_markdown(const char* title, const std::vector<TimeChange>& changes, std::ostream& out) {
  out << "### " << title << "\n\n";
  if (changes.empty()) {
    out << "No change.\n\n";
    return;
  }
  out << "| change | name | before | after |\n|---:|---|---:|---:|\n";
  for (const auto& c : changes) {
    out << "| " << signed_ms(c.delta_ms()) << " | " << format::md_code(c.name) << " | " << fixed(c.base_ms_per_step, 3)
        << " ms | " << fixed(c.new_ms_per_step, 3) << " ms |\n";
  }
  out << "\n";
}

}  // namespace

void print_diff_text(const DiffReport& diff, std::ostream& out, size_t width) {
  text::wrapped(out, "ptadvise diff: ", 15, visible(diff.base_path) + " -> " + visible(diff.new_path), width, 4);
  out << "step time: " << fixed(diff.base_step_ms, 3) << " ms -> " << fixed(diff.new_step_ms, 3) << " ms ("
      << signed_pct(diff.step_change_pct) << "); "
      << (diff.regressed() ? "REGRESSION above " : "within ") << fixed(diff.max_regression_pct, 1) << "%\n\n";
  print_findings_text("findings that appeared", '+', diff.appeared, out, width);
  print_findings_text("findings that disappeared", '-', diff.disappeared, out, width);
  out << "\n";
  print_changes_text("GPU kernel time per step, biggest changes", diff.kernels, out, width);
  print_changes_text("CPU op time per step (inclusive), biggest changes", diff.ops, out, width);
}

void print_diff_markdown(const DiffReport& diff, std::ostream& out) {
  out << "## ptadvise diff\n\n"
      << format::md_code(diff.base_path) << " → " << format::md_code(diff.new_path) << "\n\n"
      << "Step time **" << fixed(diff.base_step_ms, 3) << " ms → " << fixed(diff.new_step_ms, 3) << " ms** ("
      << signed_pct(diff.step_change_pct) << "): "
      << (diff.regressed() ? "**regression** above " : "within ") << fixed(diff.max_regression_pct, 1) << "%.\n\n";
  print_findings_markdown("Findings that appeared", diff.appeared, out);
  print_findings_markdown("Findings that disappeared", diff.disappeared, out);
  print_changes_markdown("GPU kernel time per step, biggest changes", diff.kernels, out);
  print_changes_markdown("CPU op time per step (inclusive), biggest changes", diff.ops, out);
}

void print_diff_json(const DiffReport& diff, std::ostream& out) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  Json document;
  document["schema_version"] = kDiffSchemaVersion;
  document["base"] = diff.base_path;
  document["new"] = diff.new_path;
  document["base_step_ms"] = number(diff.base_step_ms, 3);
  document["new_step_ms"] = number(diff.new_step_ms, 3);
  document["step_change_pct"] = number(diff.step_change_pct, 2);
  document["max_regression_pct"] = number(diff.max_regression_pct, 2);
  document["regressed"] = diff.regressed();
  document["appeared"] = findings_document(diff.appeared);
  document["disappeared"] = findings_document(diff.disappeared);
  document["kernels"] = changes_document(diff.kernels);
  document["ops"] = changes_document(diff.ops);
  jsondoc::write(out, document);
}

}  // namespace ptadvise
