// A microsecond between the host's and the GPU's clocks does not change a report. Kineto converts the
// GPU's timestamps to the host clock with an offset that is never exact, and each side rounds to µs on
// its own: another recording of the same run places every GPU op a microsecond or so earlier or later
// against the calls that launched it. A saving that moved by a third with a 1 µs shift (the replay took
// launches that outlasted a tiny kernel for waits) showed the need.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "corpus_traces.h"
#include "json_report.h"
#include "temp_dir.h"
#include "trace_text.h"

TEST_SUITE_BEGIN("corpus");

#if defined(__SANITIZE_ADDRESS__)
TEST_CASE("corpus: a microsecond of offset between the host and GPU clocks leaves the report as it was") {
  MESSAGE("skipped under the sanitizers: each trace is checked three times (the plain run checks them)");
}
#else
namespace {

struct CheckedTrace {
  int steps = 0;
  double step_ms = 0;
  std::map<std::string, double> savings;  // rule and site -> saving, ms per step
};

CheckedTrace check_trace(const std::string& path) {
  const nlohmann::json trace = ptadvise::testing::checked_trace_json(path);
  CheckedTrace report;
  report.steps = trace.at("steps").get<int>();
  report.step_ms = trace.at("step_ms").get<double>();
  for (const auto& finding : trace.at("findings")) {
    report.savings[finding.at("rule_id").get<std::string>() + " at " +
                   finding.at("site").at("description").get<std::string>()] =
        finding.at("saving_ms_per_step").get<double>();
  }
  return report;
}

// Where each GPU-side event's "ts" is written, read once for both shifts.
struct GpuTimestamp {
  size_t event = 0;
  ptadvise::testing::FieldText field;
  double at = 0;
};

std::vector<GpuTimestamp> gpu_timestamps(const ptadvise::testing::EventList& list) {
  simdjson::ondemand::parser parser;
  std::vector<GpuTimestamp> found;
  for (size_t k = 0; k < list.events.size(); ++k) {
    const auto fields = ptadvise::testing::object_fields(parser, list.events[k]);
    if (!fields) FAIL("an event simdjson walked is not an object: " << list.events[k].substr(0, 200));
    const ptadvise::testing::FieldText* ts = ptadvise::testing::find_field(*fields, "ts");
    const std::optional<double> at = ptadvise::testing::number_field(*fields, "ts");
    if (ts != nullptr && at && ptadvise::testing::gpu_side_category(ptadvise::testing::string_field(*fields, "cat"))) {
      found.push_back({k, *ts, *at});
    }
  }
  return found;
}

// The trace's events with every GPU-side one `shift_us` later (earlier when negative).
std::vector<std::string> shifted(const ptadvise::testing::EventList& list, const std::vector<GpuTimestamp>& gpu,
                                 double shift_us) {
  std::vector<std::string> events(list.events.begin(), list.events.end());
  for (const GpuTimestamp& ts : gpu) {
    const bool integer = ts.field.value.find_first_of(".eE") == std::string_view::npos;
    const std::string moved = integer ? std::to_string(static_cast<int64_t>(ts.at) + static_cast<int64_t>(shift_us))
                                      : ptadvise::testing::number_text(ts.at + shift_us);  // integer µs stay integers
    events[ts.event] = ptadvise::testing::with_value(list.events[ts.event], ts.field, moved);
  }
  return events;
}

std::string differences(const CheckedTrace& base, const CheckedTrace& other) {
  std::ostringstream out;
  if (other.steps != base.steps) out << "steps " << base.steps << " -> " << other.steps << "; ";
  if (std::abs(other.step_ms - base.step_ms) > 0.01 * base.step_ms) {
    out << "step " << base.step_ms << " -> " << other.step_ms << " ms; ";
  }
  for (const auto& [finding, saving] : base.savings) {
    auto found = other.savings.find(finding);
    if (found == other.savings.end()) {
      out << finding << " gone; ";
    } else if (std::abs(found->second - saving) > 0.03 * std::max(saving, found->second) + 0.05) {
      out << finding << " saves " << saving << " -> " << found->second << " ms; ";
    }
  }
  for (const auto& [finding, saving] : other.savings) {
    if (!base.savings.contains(finding)) out << finding << " new (" << saving << " ms); ";
  }
  return out.str();
}

}  // namespace

TEST_CASE("corpus: a microsecond of offset between the host and GPU clocks leaves the report as it was") {
  const auto corpus = ptadvise::testing::corpus_traces();
  if (!corpus) return;
  // The traces of up to 4 MiB on disk: 50 of the 56, every era and writer.
  const std::vector<std::filesystem::path> traces = ptadvise::testing::corpus_trace_files(uintmax_t{4} << 20);
  ptadvise::testing::TempDir dir;
  size_t compared = 0, findings = 0;
  for (const auto& path : traces) {
    const std::string text = ptadvise::testing::read_trace_text(path.string());
    const auto list = ptadvise::testing::split_event_list(text);
    if (!list) continue;  // not clean JSON (a Kineto quirk the loader recovers from)
    CAPTURE(path.filename().string());
    const std::vector<GpuTimestamp> gpu = gpu_timestamps(*list);
    if (gpu.empty()) continue;  // no GPU activity to shift
    const CheckedTrace base = check_trace(path.string());
    for (const double shift_us : {-1.0, 1.0}) {
      CAPTURE(shift_us);
      const std::string rewritten = dir.file("shifted.json");
      ptadvise::testing::write_events_file(rewritten, *list, shifted(*list, gpu, shift_us));
      const std::string changed = differences(base, check_trace(rewritten));
      CHECK_MESSAGE(changed.empty(), changed);
      if (shift_us > 0) {
        ++compared;
        findings += base.savings.size();
      }
    }
  }
  MESSAGE(compared << " traces with GPU activity checked with their GPU clock 1 µs earlier and later (" << findings
                   << " findings)");
  CHECK(compared >= 40);
  CHECK(findings >= 40);
}
#endif
