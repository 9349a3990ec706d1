// `ptadvise check --format json --exit-zero --threads 1 PATH` run in-process, for tests that compare the
// reports of rewritten traces: the report of the trace (the first of `traces`).
#pragma once

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "ptadvise/advisor.h"

namespace ptadvise::testing {

inline nlohmann::json checked_trace_json(const std::string& path) {
  CheckOptions options;
  options.traces = {path};
  options.format = "json";
  options.exit_zero = true;
  options.threads = 1;
  std::ostringstream out, err;
  const int code = run_check(options, out, err);
  REQUIRE_MESSAGE(code == 0, path << ": " << err.str());
  return nlohmann::json::parse(out.str()).at("traces").at(0);
}

}  // namespace ptadvise::testing
