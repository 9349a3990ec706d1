// JUnit XML for CI test reports: a testsuite per trace, a testcase per rule. Written by pugixml, which
// escapes; control characters (not allowed in XML 1.0, not even as references) are made visible first, and
// line breaks inside names too (a name must not start a line of a CI log).
#include <pugixml.hpp>

#include <ostream>

#include "format.h"

namespace ptadvise {

namespace {

using format::fixed;

using format::visible;

// An element's text: our own line breaks stay; the pieces from the trace went through `visible` already.
std::string xml_text(std::string_view text) { return visible(text, /*keep_newlines=*/true); }

// An attribute is one line.
void set(pugi::xml_node node, const char* name, const std::string& value) {
  node.append_attribute(name).set_value(visible(value).c_str());
}

void set(pugi::xml_node node, const char* name, size_t value) {
  node.append_attribute(name).set_value(static_cast<unsigned long long>(value));
}

struct Case {
  const RuleInfo* rule;
  std::vector<size_t> findings;
  bool failed = false;
};

std::string case_body(const TraceReport& trace, const Case& c) {
  std::string body;
  for (size_t i : c.findings) {
    const Finding& f = trace.findings[i];
    std::string where = format::source_text(f);
    body += "#" + std::to_string(f.rank) + " " + std::string(to_string(f.severity)) + ": " + visible(f.message) +
            "\n  at " + visible(where.empty() ? describe_site(f.site) : where) + "\n  saves ~" + fixed(f.saving_ms_per_step, 3) +
            " ms per step" + (!trace.new_finding.empty() && !trace.new_finding[i] ? " (in baseline)" : "") + "\n";
    if (!f.fix.empty()) body += "  fix: " + visible(f.fix) + "\n";
  }
  return body;
}

}  // namespace

void print_junit(const Report& report, std::ostream& out) {
  const std::vector<RuleInfo> rules = format::all_rules(report);
  std::vector<std::vector<Case>> suites;
  size_t tests = 0, failures = 0;
  for (const auto& trace : report.traces) {
    std::vector<Case> cases;
    for (const auto& rule : rules) cases.push_back({&rule, {}, false});
    for (size_t i = 0; i < trace.findings.size(); ++i) {
      for (auto& c : cases) {
        if (c.rule->id == trace.findings[i].rule_id) {
          c.findings.push_back(i);
          c.failed = c.failed || is_failing(report, trace, i);
        }
      }
    }
    for (const auto& c : cases) failures += c.failed ? 1 : 0;
    tests += cases.size();
    suites.push_back(std::move(cases));
  }

  pugi::xml_document document;
  pugi::xml_node declaration = document.append_child(pugi::node_declaration);
  declaration.append_attribute("version").set_value("1.0");
  declaration.append_attribute("encoding").set_value("UTF-8");
  pugi::xml_node root = document.append_child("testsuites");
  set(root, "name", std::string("ptadvise"));
  set(root, "tests", tests);
  set(root, "failures", failures);
  for (size_t t = 0; t < report.traces.size(); ++t) {
    const TraceReport& trace = report.traces[t];
    size_t suite_failures = 0, suite_skipped = 0;
    for (const auto& c : suites[t]) {
      suite_failures += c.failed ? 1 : 0;
      for (const auto& not_run : trace.coverage.not_run) suite_skipped += not_run.first == c.rule->id ? 1 : 0;
    }
    pugi::xml_node suite = root.append_child("testsuite");
    set(suite, "name", format::trace_label(trace));
    set(suite, "tests", suites[t].size());
    set(suite, "failures", suite_failures);
    set(suite, "errors", size_t{0});
    set(suite, "skipped", suite_skipped);
    for (const auto& c : suites[t]) {
      pugi::xml_node testcase = suite.append_child("testcase");
      set(testcase, "classname", "ptadvise." + c.rule->id);
      set(testcase, "name", c.rule->id + " " + c.rule->name);
      std::string not_run;
      for (const auto& [id, reason] : trace.coverage.not_run) {
        if (id == c.rule->id) not_run = reason;
      }
      if (!not_run.empty()) {
        set(testcase.append_child("skipped"), "message", "could not check this trace: " + not_run);
        continue;
      }
      if (c.findings.empty()) continue;
      double saving = 0;
      for (size_t i : c.findings) saving += trace.findings[i].saving_ms_per_step;
      const std::string summary = std::to_string(c.findings.size()) +
                                  (c.findings.size() == 1 ? " finding" : " findings") + ", ~" + fixed(saving, 3) +
                                  " ms per step";
      const std::string body = case_body(trace, c);
      if (c.failed) {
        pugi::xml_node failure = testcase.append_child("failure");
        set(failure, "message", summary);
        set(failure, "type", c.rule->id);
        failure.text().set(xml_text(body).c_str());
      } else {
        testcase.append_child("system-out").text().set(xml_text(summary + " (not failing)\n" + body).c_str());
      }
    }
  }
  document.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
}

}  // namespace ptadvise
