// A shorter profiling window of the same run gets the same findings. Users profile a few steps or many:
// the trace of the first half of a run's steps is as much a recording of that program as the whole one,
// and which causes are reported must not depend on how many steps were recorded (a finding that vanished
// on the shorter window because an earlier one took the GPU bound first showed the need).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "corpus_traces.h"
#include "gzip_bytes.h"
#include "json_report.h"
#include "temp_dir.h"

TEST_SUITE_BEGIN("corpus");

#if defined(__SANITIZE_ADDRESS__)
TEST_CASE("corpus: the first half of a run's steps gets the findings of the whole run") {
  MESSAGE("skipped under the sanitizers: the traces with five steps or more are 15-54 MB (the plain run checks them)");
}
#else
namespace {

struct Checked {
  std::set<std::string> rules;    // every finding's rule
  std::set<std::string> failing;  // the rules of the findings that fail the gate (above their noise floor)
  int steps = 0;
  double step_ms = 0;
};

Checked check_window(const std::string& path) {
  const nlohmann::json trace = ptadvise::testing::checked_trace_json(path);
  Checked checked;
  checked.steps = trace.at("steps").get<int>();
  checked.step_ms = trace.at("step_ms").get<double>();
  for (const auto& finding : trace.at("findings")) {
    checked.rules.insert(finding.at("rule_id").get<std::string>());
    if (finding.at("failing").get<bool>()) checked.failing.insert(finding.at("rule_id").get<std::string>());
  }
  return checked;
}

bool is_gpu_side_event(const std::string& category) {
  static const std::set<std::string> gpu{"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset",
                                         "gpu_user_annotation"};
  return gpu.contains(category);
}

// The trace as if profiling had stopped at `stop`: host events from then on are gone, the ones running
// then end there; GPU work launched before it is kept whole (the profiler synchronizes before it stops).
nlohmann::json stopped_at(const nlohmann::json& trace, double stop) {
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  std::set<long long> launched;
  for (const auto& e : events) {
    const std::string category = e.value("cat", "");
    if ((category == "cuda_runtime" || category == "Runtime" || category == "cuda_driver") && e.contains("ts") &&
        e["ts"].is_number() && e["ts"].get<double>() < stop && e.contains("args") && e["args"].contains("correlation")) {
      launched.insert(e["args"]["correlation"].get<long long>());
    }
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& e : events) {
    if (!e.is_object() || e.value("ph", "") == "M" || !e.contains("ts") || !e["ts"].is_number()) {
      kept.push_back(e);
      continue;
    }
    const double ts = e["ts"].get<double>();
    if (is_gpu_side_event(e.value("cat", ""))) {
      const bool ours = e.contains("args") && e["args"].contains("correlation") &&
                        launched.contains(e["args"]["correlation"].get<long long>());
      if (ts < stop || ours) kept.push_back(e);
      continue;
    }
    if (ts >= stop) continue;
    nlohmann::json copy = e;
    if (copy.contains("dur") && copy["dur"].is_number() && ts + copy["dur"].get<double>() > stop) copy["dur"] = stop - ts;
    kept.push_back(std::move(copy));
  }
  if (trace.is_array()) return kept;
  nlohmann::json out = trace;
  out["traceEvents"] = std::move(kept);
  return out;
}

}  // namespace

TEST_CASE("corpus: the first half of a run's steps gets the findings of the whole run") {
  const auto corpus = ptadvise::testing::corpus_traces();
  if (!corpus) return;
  std::vector<std::filesystem::path> traces;
  for (const auto& entry : std::filesystem::directory_iterator(*corpus)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json") || name.ends_with(".json.gz")) traces.push_back(entry.path());
  }
  std::sort(traces.begin(), traces.end());
  ptadvise::testing::TempDir dir;
  std::filesystem::create_directories(dir.file("half"));
  size_t compared = 0, failing_findings = 0;
  for (const auto& path : traces) {
    const std::string text = ptadvise::testing::gunzip_file(path.string());
    const nlohmann::json trace = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (trace.is_discarded()) continue;  // not clean JSON (a Kineto quirk the loader recovers from)
    const nlohmann::json& events = trace.is_array() ? trace : trace.value("traceEvents", nlohmann::json::array());
    std::vector<double> starts;
    for (const auto& e : events) {
      if (e.is_object() && e.value("ph", "") == "X" && e.value("cat", "") != "gpu_user_annotation" &&
          e.value("name", "").starts_with("ProfilerStep#") && e.contains("ts") && e["ts"].is_number()) {
        starts.push_back(e["ts"].get<double>());
      }
    }
    if (starts.size() < 5) continue;
    std::sort(starts.begin(), starts.end());
    CAPTURE(path.filename().string());
    // Stopped where step (n + 1) / 2 + 1 starts: the first half and one step more, the last of them whole.
    const double stop = starts[(starts.size() + 1) / 2 + 1];
    const std::string half = dir.file("half/" + path.filename().replace_extension("").string() +
                                      (path.extension() == ".gz" ? "" : ".json"));
    std::ofstream(half) << stopped_at(trace, stop).dump();
    const Checked whole = check_window(path.string());
    const Checked part = check_window(half);
    CHECK(part.steps < whole.steps);
    CHECK(part.step_ms == doctest::Approx(whole.step_ms).epsilon(0.1));
    // A finding that fails the gate on one window is reported on the other. (One near its noise floor may
    // be reported on one and not the other: its worth moves with the steps recorded.)
    auto missing = [](const std::set<std::string>& required, const std::set<std::string>& reported) {
      std::string rules;
      for (const std::string& rule : required) {
        if (!reported.contains(rule)) rules += (rules.empty() ? "" : " ") + rule;
      }
      return rules;
    };
    CHECK_MESSAGE(missing(whole.failing, part.rules).empty(), "failing on the whole run, not reported on its first half: "
                                                                  << missing(whole.failing, part.rules));
    CHECK_MESSAGE(missing(part.failing, whole.rules).empty(), "failing on the first half, not reported on the whole run: "
                                                                  << missing(part.failing, whole.rules));
    failing_findings += whole.failing.size();
    ++compared;
  }
  MESSAGE(compared << " traces of five steps or more compared with their first half (" << failing_findings
                   << " failing findings on the whole runs)");
  CHECK(compared >= 7);
  CHECK(failing_findings >= 10);
}
#endif
