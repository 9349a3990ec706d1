// The HTML report: one self-contained file (style, Apache ECharts, the rendering script and the data all
// inline; nothing is fetched). The data is the very document `--format json` prints, so the page shows
// nothing the JSON does not say. See docs/REPORT.md.
#include <ostream>

#include "ptadvise/bad_alloc_shield.h"
#include "report_doc.h"

namespace ptadvise {

namespace html_assets {
std::string_view report_css();
std::string_view report_js();
std::string_view echarts_js();
}  // namespace html_assets

namespace {

// JSON inside <script type="application/json">: '<', '>' and '&' only occur inside JSON strings, where
// \u escapes mean the same text, so no "</script>" or "<!--" in a trace name can end the element.
std::string script_safe_json(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

void print_html(const Report& report, std::ostream& out) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         // Belt and braces for "opens offline": the page may not load anything from anywhere.
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
         "style-src 'unsafe-inline'; img-src data:\">\n"
         "<title>ptadvise report</title>\n<style>\n"
      << html_assets::report_css() << "</style>\n</head>\n<body>\n<main id=\"app\"></main>\n"
      << "<script id=\"ptadvise-data\" type=\"application/json\">" << script_safe_json(jsondoc::dump(report_document(report), -1))
      << "</script>\n<script>\n"
      << html_assets::echarts_js() << "\n</script>\n<script>\n"
      << html_assets::report_js() << "</script>\n</body>\n</html>\n";
}

}  // namespace ptadvise
