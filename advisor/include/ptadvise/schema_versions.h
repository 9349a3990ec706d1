// Versions of the JSON documents ptadvise writes, published as JSON Schemas in schemas/ (installed in
// share/ptadvise/schemas). Each document carries its version as "schema_version": "MAJOR.MINOR".
// MINOR grows when fields are added (readers of the same MAJOR keep working); MAJOR when a field is
// removed, renamed or changes meaning or type. The schema files accept every MINOR of their MAJOR.
#pragma once

namespace ptadvise {

inline constexpr const char* kCheckSchemaVersion = "1.2";    // check --format json  (schemas/check.schema.json)
inline constexpr const char* kSummarySchemaVersion = "1.0";  // summary --format json (schemas/summary.schema.json)
inline constexpr const char* kDiffSchemaVersion = "1.0";     // diff --format json    (schemas/diff.schema.json)
// The rank digest (check --digest-out, schemas/digest.schema.json) carries its own "1.5" from
// job/src/digest_io.cpp: the job library does not depend on the advisor.

}  // namespace ptadvise
