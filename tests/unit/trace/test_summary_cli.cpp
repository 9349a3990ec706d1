// End to end: the built CLI's `summary` on a fixture file, and its input-error path.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "trace_builder.h"

using namespace ptadvise::testing;

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Run run_cli(const std::string& arguments, const std::filesystem::path& scratch) {
  const auto out_path = scratch / "stdout.txt";
  const auto err_path = scratch / "stderr.txt";
  const std::string command = std::string("'") + PTADVISE_BINARY + "' " + arguments + " >'" + out_path.string() +
                              "' 2>'" + err_path.string() + "'";
  Run run;
  int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = slurp(out_path);
  run.err = slurp(err_path);
  return run;
}

std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ptadvise-summary-cli-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("cli: summary --format json on a fixture prints the documented keys") {
  TraceBuilder trace(Era::Kineto2023);
  trace.device(0, "NVIDIA A100", 8, 0, 80LL << 30);
  trace.annotation("ProfilerStep#1", 0, 1000);
  trace.launch("gemm", 10, 5, 100, 400);
  trace.annotation("ProfilerStep#2", 1000, 1000);
  trace.launch("gemm", 1010, 5, 1100, 400);
  const auto dir = scratch_dir("json");
  const auto trace_path = dir / "trace.json";
  std::ofstream(trace_path) << trace.json();

  Run run = run_cli("summary --format json '" + trace_path.string() + "'", dir);
  CHECK(run.exit_code == 0);
  CHECK(run.err.empty());
  for (std::string key : {"\"devices\"", "\"steps\"", "\"count\": 2", "\"source\": \"ProfilerStep\"",
                          "\"median_ms\": 1", "\"p90_ms\"", "\"gpu_busy_pct\": 40", "\"kernels_per_step\": 1",
                          "\"tiny_kernel_pct\": 0", "\"idle_causes_ms\""}) {
    CAPTURE(key);
    CHECK(run.out.find(key) != std::string::npos);
  }

  Run text = run_cli("summary '" + trace_path.string() + "'", dir);
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("GPU busy") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli: summary on a missing trace is an input error with one line on stderr") {
  const auto dir = scratch_dir("missing");
  Run run = run_cli("summary '" + (dir / "no-such-trace.json").string() + "'", dir);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(run.err.rfind("ptadvise: error: ", 0) == 0);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  std::filesystem::remove_all(dir);
}
