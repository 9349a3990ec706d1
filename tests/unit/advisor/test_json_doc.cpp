// The JSON writer every JSON output goes through (advisor/src/json_doc.h): what a terminal or a CI log
// would act on inside strings is written as a \u escape, and everything else is copied as it is.
#include <doctest/doctest.h>

#include <string>

#include "json_doc.h"

using ptadvise::jsondoc::dump;
using ptadvise::jsondoc::Json;

namespace {

std::string dumped(const std::string& text) { return dump(Json(text), -1); }

}  // namespace

TEST_CASE("json_doc: DEL, C1 controls and ##[command] are escaped, everything else is kept") {
  CHECK(dumped("plain") == "\"plain\"");
  CHECK(dumped("a\x7f" "b") == "\"a\\u007fb\"");
  CHECK(dumped("\xc2\x85x\xc2\x9b" "31m") == "\"\\u0085x\\u009b31m\"");
  CHECK(dumped("nbsp\xc2\xa0.") == "\"nbsp\xc2\xa0.\"");  // U+00A0 is text, not a control
  CHECK(dumped("a##[error]b") == "\"a#\\u0023[error]b\"");
  CHECK(dumped("##vso[task]") == "\"#\\u0023vso[task]\"");
  // Only the '#' pair just before the command is broken; a '#' run keeps all but the one escaped.
  CHECK(dumped("###[x]") == "\"##\\u0023[x]\"");
  CHECK(dumped("## [x] ##a#b[ #") == "\"## [x] ##a#b[ #\"");
  CHECK(dumped("end ##") == "\"end ##\"");
  CHECK(dumped("\x7f##x[\x7f") == "\"\\u007f#\\u0023x[\\u007f\"");
  // Indented documents: keys are strings too.
  Json document = {{"k##[x]", "v"}};
  CHECK(dump(document) == "{\n  \"k#\\u0023[x]\": \"v\"\n}");
}
