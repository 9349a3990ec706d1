// `check --annotate OUT.json.gz` on real traces that carry baseTimeNanoseconds: the output is real gzip,
// and every finding marker sits on its evidence events in the file's own time base (Perfetto places
// events by the `ts` written in the file, never adding baseTimeNanoseconds).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "../advisor/python_check.h"
#include "../advisor/temp_dir.h"
#include "cli_run.h"
#include "corpus_traces.h"

namespace {

using ptadvise::testing::ptadvise_cli;
using ptadvise::testing::Run;
using ptadvise::testing::TempDir;

}  // namespace

TEST_CASE("annotate: markers overlap their evidence in the file's time base on corpus traces (gzip output)") {
  if (!std::filesystem::is_directory(ptadvise::testing::corpus_dir())) {
    MESSAGE("skipped: the trace corpus " << ptadvise::testing::corpus_dir() << " is not there");
    return;
  }
  if (!ptadvise::testing::python_has("gzip, json")) {
    MESSAGE("skipped: python3 with gzip and json is not there");
    return;
  }
  // Relative ts with baseTimeNanoseconds (epoch base), on CPU, NVIDIA and AMD traces.
  const char* traces[] = {
      "TraceLens__tests__traces__h100__Falconsai_nsfw_image_detection__1016002.json.gz",
      "TraceLens__tests__traces__h100__gaunernst_bert-small-uncased__1016001.json.gz",
      "TraceLens__tests__traces__mi210__gpu_only_trace__gpu_only_trace.json.gz",
      "TraceLens__tests__traces__inference__vllm_decode_full__graph_execution.json.gz",
  };
  for (const char* name : traces) {
    CAPTURE(name);
    TempDir dir;
    Run run = ptadvise_cli("check --exit-zero --format json --annotate annotated.json.gz '" + ptadvise::testing::corpus_dir() + name + "'",
                           dir.path());
    REQUIRE(run.exit_code == 0);
    dir.write("check.json", run.out);
    CHECK(ptadvise::testing::run_python_file(PTADVISE_SOURCE_DIR "/tests/tools/check_annotated.py",
                                             dir.file("annotated.json.gz") + " " + dir.file("check.json")) == 0);
  }
}
