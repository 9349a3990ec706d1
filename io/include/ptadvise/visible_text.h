// Text from outside ptadvise (event and device names, file paths, notes of other processes) made safe to
// print on a terminal or into a CI log.
#pragma once

#include <string>
#include <string_view>

namespace ptadvise {

// C0 and C1 control characters and DEL, which a terminal or a CI log would act on (ESC sequences, a CR
// that rewrites the line, a newline that starts a forged `::error` line), become visible `\xNN` (C1:
// `\u00NN`) escapes; newlines and tabs stay when `keep_newlines`. CI log commands that need no newline
// are neutralised too: `::` at the start or after white space (GitHub Actions trims a line before looking
// for `::command::`) becomes `:\x3a`, and `##[`, `##vso[`, `##teamcity[` (legacy GitHub, Azure Pipelines
// and TeamCity commands, recognised anywhere in a line) become `#\x23[`... . Real trace names contain none
// of these.
std::string visible_text(std::string_view text, bool keep_newlines = false);

}  // namespace ptadvise
