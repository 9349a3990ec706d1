// `check --digest-out` per rank then `merge` gives the same job findings as `check` on all ranks together:
// 64 generated ranks of one job, rank 17 arriving late at every all-reduce.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One rank: 4 steps of 100 ms; compute 5..60 ms; an all-reduce of 64 MiB in group "0" from `arrive` ms to 90 ms.
std::string rank_trace(int rank, int world, double arrive_ms) {
  std::ostringstream out;
  out.precision(15);
  const double base = 1.7e15 + rank * 3e6;  // µs; every rank's clock differs
  out << "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"NVIDIA H100 80GB HBM3\",\"computeMajor\":9,"
         "\"computeMinor\":0,\"totalGlobalMem\":85899345920,\"numSms\":132}],"
      << "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" << rank << ",\"world_size\":" << world << "},"
      << "\"traceEvents\":[";
  int correlation = 10;
  bool first = true;
  auto event = [&](const std::string& json) {
    out << (first ? "" : ",") << json;
    first = false;
  };
  for (int step = 0; step < 4; ++step) {
    const double t0 = base + step * 100000.0;
    std::ostringstream e;
    e.precision(15);
    e << "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" << step + 1
      << "\",\"pid\":1,\"tid\":1,\"ts\":" << t0 << ",\"dur\":99999}";
    event(e.str());
    for (int k = 0; k < 2; ++k) {
      const bool comm = k == 1;
      const double start = t0 + (comm ? arrive_ms : 5.0) * 1000;
      const double dur = comm ? (90.0 - arrive_ms) * 1000 : 55000;
      ++correlation;
      std::ostringstream op, launch, kernel;
      op.precision(15);
      launch.precision(15);
      kernel.precision(15);
      op << "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" << (comm ? "record_param_comms" : "aten::mm")
         << "\",\"pid\":1,\"tid\":1,\"ts\":" << start - 60 << ",\"dur\":20,\"args\":{\"External id\":" << correlation
         << (comm ? ",\"Collective name\":\"allreduce\",\"In msg nelems\":16777216,\"Out msg nelems\":16777216,"
                    "\"dtype\":\"Float\",\"Group size\":64,\"Process Group Name\":\"0\""
                  : "")
         << "}}";
      launch << "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":"
             << start - 50 << ",\"dur\":8,\"args\":{\"correlation\":" << correlation << "}}";
      kernel << "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\""
             << (comm ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL" : "sm90_xmma_gemm_bf16bf16_bf16f32")
             << "\",\"pid\":0,\"tid\":" << (comm ? 20 : 7) << ",\"ts\":" << start << ",\"dur\":" << dur
             << ",\"args\":{\"device\":0,\"stream\":" << (comm ? 20 : 7) << ",\"correlation\":" << correlation << "}}";
      event(op.str());
      event(launch.str());
      event(kernel.str());
    }
  }
  out << "]}\n";
  return out.str();
}

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The job entry of a JSON report: from its "job" object to the next trace entry.
std::string job_findings(const std::string& report) {
  size_t job = report.find("\"job\": {");
  REQUIRE(job != std::string::npos);
  size_t findings = report.find("\"findings\": [", job);
  REQUIRE(findings != std::string::npos);
  size_t end = report.find("\n    }", findings);
  return report.substr(findings, end - findings);
}

// The "whatif" object of a report's job entry.
std::string job_whatif(const std::string& report) {
  size_t at = report.find("\"whatif\": {\n        \"available\"");
  REQUIRE(at != std::string::npos);
  size_t end = report.find('}', at);
  return report.substr(at, end - at + 1);
}

}  // namespace

TEST_CASE("job: merging 64 ranks' digests gives the job findings of checking them together") {
  const fs::path dir = fs::temp_directory_path() / ("ptadvise-merge-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "traces");
  fs::create_directories(dir / "digests");
  for (int rank = 0; rank < 64; ++rank) {
    std::ofstream(dir / "traces" / ("rank-" + std::to_string(rank) + ".json")) << rank_trace(rank, 64, rank == 17 ? 40.0 : 30.0);
  }
  const std::string exe = "'" PTADVISE_BINARY "'";
  const std::string together = (dir / "together.json").string();
  CHECK(run(exe + " check --exit-zero --format json '" + (dir / "traces").string() + "' >'" + together + "'") == 0);
  // One rank per call, as a scheduler's array job runs them.
  for (int rank = 0; rank < 64; ++rank) {
    const std::string r = std::to_string(rank);
    CHECK(run(exe + " check --exit-zero --format json '" + (dir / "traces" / ("rank-" + r + ".json")).string() +
              "' --digest-out '" + (dir / "digests" / ("rank-" + r + ".json")).string() + "' >/dev/null") == 0);
  }
  const std::string merged = (dir / "merged.json").string();
  CHECK(run(exe + " merge --exit-zero --format json '" + (dir / "digests").string() + "'/*.json >'" + merged + "'") == 0);
  const std::string a = read_file(together), b = read_file(merged);
  const std::string job_a = job_findings(a), job_b = job_findings(b);
  CHECK(job_a == job_b);
  CHECK(job_whatif(a) == job_whatif(b));  // the joined replay from digests is the one from the traces
  CHECK(job_a.find("\"rule_id\": \"PTA202\"") != std::string::npos);
  std::string compact = job_a;
  std::erase_if(compact, [](char c) { return c == ' ' || c == '\n'; });
  CHECK(compact.find("\"ranks\":[17]") != std::string::npos);
  CHECK(a.find("\"aligned_collectives\": 4") != std::string::npos);
  CHECK(b.find("\"aligned_collectives\": 4") != std::string::npos);
  // Each digest is a few KB.
  CHECK(fs::file_size(dir / "digests" / "rank-17.json") < 8192);
  fs::remove_all(dir);
}

TEST_CASE("job: ranks 0 and 1 of two unrelated runs are not one job") {
  const std::string shared = PTADVISE_SHARED_DIR "/traces/";
  const std::string a = shared + "HTA__tests__data__nccl_parser_config__nccl_data.json.gz";  // rank 0 of 2, nccl
  const std::string b = shared + "HTA__tests__data__df_index_resolver__df_index_resolver.json.gz";  // rank 1 of 2, nccl
  if (!fs::exists(a) || !fs::exists(b)) {
    MESSAGE("skipped: the shared traces are absent (they live beside the project)");
    return;
  }
  const fs::path out = fs::temp_directory_path() / ("ptadvise-unrelated-" + std::to_string(::getpid()));
  CHECK(run("'" PTADVISE_BINARY "' check --exit-zero --format json '" + a + "' '" + b + "' >'" + out.string() +
            ".json' 2>'" + out.string() + ".err'") == 0);
  CHECK(read_file(out.string() + ".json").find("\"job\": {") == std::string::npos);
  CHECK(read_file(out.string() + ".err").find("share no collective: not the ranks of one job") != std::string::npos);
  fs::remove(out.string() + ".json");
  fs::remove(out.string() + ".err");
}

TEST_CASE("job: job rules are selected, ignored and configured like the others") {
  const std::string fire = PTADVISE_SOURCE_DIR "/rules.d/job/straggler-rank.tests/fire";
  const fs::path out = fs::temp_directory_path() / ("ptadvise-select-" + std::to_string(::getpid()) + ".json");
  const std::string exe = "'" PTADVISE_BINARY "' check --exit-zero --format json ";
  auto report = [&](const std::string& options) {
    CHECK(run(exe + options + " '" + fire + "' >'" + out.string() + "' 2>/dev/null") == 0);
    return read_file(out);
  };
  CHECK(report("").find("\"rule_id\": \"PTA202\"") != std::string::npos);
  CHECK(report("--ignore PTA202").find("\"rule_id\": \"PTA202\"") == std::string::npos);
  std::string only = report("--select straggler-rank");
  CHECK(only.find("\"rule_id\": \"PTA202\"") != std::string::npos);
  CHECK(only.find("\"rule_id\": \"PTA201\"") == std::string::npos);
  const fs::path config = fs::temp_directory_path() / ("ptadvise-select-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(config) << "rules:\n  PTA202:\n    severity: error\n    thresholds:\n      min_caused_wait_pct: 99\n";
  CHECK(report("--config '" + config.string() + "'").find("\"rule_id\": \"PTA202\"") == std::string::npos);
  std::ofstream(config) << "rules:\n  straggler-rank:\n    severity: error\n";
  CHECK(report("--config '" + config.string() + "'").find("\"severity\": \"error\"") != std::string::npos);
  fs::remove(out);
  fs::remove(config);
}

TEST_CASE("job: one rank of a job checked alone gets the job rules that judge one rank") {
  // 4 gloo ranks; checked together, PTA201 reports 16.832 ms of exposed communication after the wait for
  // late ranks is taken out. Rank 2 alone cannot tell that wait apart: it reports it all, and says so (these
  // traces name their rank in the file name only, so the job's size is not known).
  const std::string quiet = PTADVISE_SOURCE_DIR "/rules.d/job/grad-accumulation-without-no-sync.tests/quiet";
  const fs::path out = fs::temp_directory_path() / ("ptadvise-lone-" + std::to_string(::getpid()) + ".json");
  const std::string exe = "'" PTADVISE_BINARY "' check --exit-zero --format json ";
  size_t ledger_only = 0;
  auto findings = [&](const std::string& arguments) {
    ledger_only = 0;
    REQUIRE(run(exe + arguments + " >'" + out.string() + "' 2>/dev/null") == 0);
    std::vector<std::tuple<std::string, double, std::string>> found;  // rule, saving, message
    const auto report = nlohmann::json::parse(read_file(out));
    for (const auto& trace : report.at("traces")) {
      // Job rules declare no transform: the all-fixes replay says it leaves them out.
      if (trace.contains("whatif") && trace.at("whatif").contains("findings_ledger_only")) {
        ledger_only += trace.at("whatif").at("findings_ledger_only").get<size_t>();
      }
      for (const auto& f : trace.at("findings")) {
        found.emplace_back(f.at("rule_id").get<std::string>(), f.at("saving_ms_per_step").get<double>(),
                           f.at("message").get<std::string>());
      }
    }
    return found;
  };
  auto alone = findings("'" + quiet + "/rank-2.pt.trace.json.gz'");
  REQUIRE(alone.size() == 1);
  CHECK(std::get<0>(alone[0]) == "PTA201");
  CHECK(std::get<1>(alone[0]) == doctest::Approx(31.852).epsilon(0.001));
  CHECK(std::get<2>(alone[0]).find("On rank 2, ") == 0);
  CHECK(std::get<2>(alone[0]).find("Measured on this rank alone (the other ranks were not given)") !=
        std::string::npos);
  CHECK(ledger_only == 1);
  CHECK(findings("--ignore exposed-communication '" + quiet + "/rank-2.pt.trace.json.gz'").empty());
  CHECK(ledger_only == 0);

  auto together = findings("'" + quiet + "'");
  REQUIRE(!together.empty());
  CHECK(std::get<0>(together[0]) == "PTA201");
  CHECK(std::get<1>(together[0]) == doctest::Approx(16.832).epsilon(0.001));
  for (const auto& f : together) CHECK(std::get<2>(f).find("Measured on this rank alone") == std::string::npos);
  fs::remove(out);
}

TEST_CASE("job: a digest keeps the report's warnings, and merge asks again for a partial trace") {
  const fs::path dir = fs::temp_directory_path() / ("ptadvise-partial-digest-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 28 good events (rank_trace) behind 60 without a timestamp: 68.2% of the events are malformed.
  std::string text = rank_trace(0, 1, 30.0);
  std::string broken;
  for (int i = 0; i < 60; ++i) broken += "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"dur\":1},";
  const size_t list = text.find("\"traceEvents\":[") + 15;
  text.insert(list, broken);
  std::ofstream(dir / "rank-0.json") << text;
  const std::string exe = "'" PTADVISE_BINARY "'";
  const std::string trace = "'" + (dir / "rank-0.json").string() + "'";
  const std::string digest = (dir / "digest.json").string();
  const std::string err = (dir / "err.txt").string();
  // check's gate, then the digest written under --accept-partial.
  CHECK(run(exe + " check --exit-zero " + trace + " >/dev/null 2>'" + err + "'") == 2);
  CHECK(run(exe + " check --exit-zero --accept-partial " + trace + " --digest-out '" + digest + "' >/dev/null 2>&1") == 0);
  const auto written = nlohmann::json::parse(read_file(digest));
  CHECK(written.at("schema_version") == "1.5");
  CHECK(written.at("partial").get<std::string>().find("68.2% of the events (60 of 88) are malformed") != std::string::npos);
  bool warned = false;
  for (const auto& warning : written.at("warnings")) {
    warned = warned || warning.get<std::string>().find("68.2% of the events") != std::string::npos;
  }
  CHECK(warned);
  // merge refuses it without --accept-partial, and with it says what check said.
  CHECK(run(exe + " merge --exit-zero '" + digest + "' >/dev/null 2>'" + err + "'") == 2);
  CHECK(read_file(err).find("digest of a partial trace: ") != std::string::npos);
  CHECK(read_file(err).find("--accept-partial") != std::string::npos);
  CHECK(run(exe + " merge --exit-zero --accept-partial '" + digest + "' >/dev/null 2>'" + err + "'") == 0);
  CHECK(read_file(err).find("ptadvise: warning: ") != std::string::npos);
  CHECK(read_file(err).find("68.2% of the events (60 of 88) are malformed") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("job: a job rule's finding carries its rule's short fix for the terminal") {
  const std::string quiet = PTADVISE_SOURCE_DIR "/rules.d/job/grad-accumulation-without-no-sync.tests/quiet";
  const fs::path out = fs::temp_directory_path() / ("ptadvise-job-text-" + std::to_string(::getpid()) + ".txt");
  REQUIRE(run("'" PTADVISE_BINARY "' check --exit-zero --color never '" + quiet + "' >'" + out.string() + "' 2>/dev/null") == 0);
  const std::string text = read_file(out);
  CHECK(text.find("warning[PTA201] exposed-communication") != std::string::npos);
  // exposed-communication's short_fix, not its fix cut to the terminal's width.
  CHECK(text.find("= help: Overlap communication with compute (DDP buckets, FSDP prefetch)\n") != std::string::npos);
  fs::remove(out);
}

namespace {

// The job entry's finding of `rule` in a check or merge JSON report (null when there is none).
nlohmann::json job_finding(const nlohmann::json& report, const std::string& rule) {
  for (const auto& trace : report.at("traces")) {
    if (!trace.contains("job")) continue;
    for (const auto& finding : trace.at("findings")) {
      if (finding.at("rule_id") == rule) return finding;
    }
  }
  return nullptr;
}

}  // namespace

// testdata/job/loader_straggler (testdata/make_job_traces.py): rank 0 loads each batch in 20 ms, rank 1 in
// 40 ms, and both read loss.item() every step; compute 15 ms (fp32), all-reduce transfer 5 ms, optimizer
// 1 ms. Both run at rank 1's pace: 40.03 + 15 + 5 + 1 + the item copy = 61.061 ms, rank 0 waiting 20 ms in
// every all-reduce. Fixed alone, rank 0's own replay keeps that wait (31.063 ms: 5 + 25 + 1 with its
// loader in workers and its GEMM on Tensor Cores); joined, both ranks' fixes remove it: 5 + 5 + 1 + 0.063.
TEST_CASE("job: the joined replay lets a fix on the late rank shorten the others' collectives") {
  const std::string exe = "'" PTADVISE_BINARY "'";
  const std::string dir = PTADVISE_SOURCE_DIR "/testdata/job/loader_straggler";
  const fs::path out = fs::temp_directory_path() / ("ptadvise-join-" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  const std::string together = (out / "together.json").string();
  CHECK(run(exe + " check --exit-zero --format json '" + dir + "' >'" + together + "'") == 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string r = std::to_string(rank);
    CHECK(run(exe + " check --exit-zero --format json '" + dir + "/rank-" + r + ".json' --digest-out '" +
              (out / ("rank-" + r + ".json")).string() + "' >/dev/null") == 0);
  }
  const std::string merged = (out / "merged.json").string();
  CHECK(run(exe + " merge --exit-zero --format json '" + (out / "rank-0.json").string() + "' '" +
            (out / "rank-1.json").string() + "' >'" + merged + "'") == 0);
  const auto report = nlohmann::json::parse(read_file(together));
  nlohmann::json whatif;
  for (const auto& trace : report.at("traces")) {
    if (trace.contains("job")) whatif = trace.at("job").at("whatif");
  }
  REQUIRE(whatif.is_object());
  CHECK(whatif.at("available") == true);
  CHECK(whatif.at("steps") == 5);  // the sixth has no step after it to end its period
  CHECK(whatif.at("measured_step_ms").get<double>() == doctest::Approx(61.061).epsilon(1e-6));
  CHECK(whatif.at("replayed_step_ms").get<double>() == doctest::Approx(61.061).epsilon(1e-6));
  CHECK(whatif.at("predicted_step_ms_all_fixes").get<double>() == doctest::Approx(11.063).epsilon(1e-6));
  CHECK(whatif.at("ranks_alone_step_ms_all_fixes").get<double>() == doctest::Approx(31.063).epsilon(1e-6));
  CHECK(whatif.at("note") == "");
  CHECK(job_whatif(read_file(together)) == job_whatif(read_file(merged)));
  // straggler-rank's keep_pace: rank 1 loading as fast as rank 0 gives 20 + 15 + 5 + 1 + 0.061 ms.
  for (const std::string& file : {together, merged}) {
    INFO(file);
    const nlohmann::json straggler = job_finding(nlohmann::json::parse(read_file(file)), "PTA202");
    REQUIRE(straggler.is_object());
    CHECK(straggler.at("saving_basis") == "ledger+replay");
    CHECK(straggler.at("saving_ms_per_step").get<double>() == doctest::Approx(20.0).epsilon(1e-6));
    CHECK(straggler.at("predicted_step_ms").get<double>() == doctest::Approx(41.061).epsilon(1e-6));
  }
  fs::remove_all(out);
}

// straggler-rank's fixture: 4 gloo ranks recorded on 2 cores, rank 2 sleeping 60 ms more before each
// forward. The joined replay with rank 2 keeping pace takes 59.172 ms off the job's 112.556 ms (the claim,
// its arrival 64.43 ms after the others' median, is larger: the others' steps also hold their own stretches
// and the transfers). exposed-communication has no transform: the job's step minus its claim.
TEST_CASE("job: every job finding carries a predicted step, by the joined replay when its rule has a transform") {
  const std::string exe = "'" PTADVISE_BINARY "'";
  const std::string dir = PTADVISE_SOURCE_DIR "/rules.d/job/straggler-rank.tests/fire";
  const fs::path out = fs::temp_directory_path() / ("ptadvise-pace-" + std::to_string(::getpid()) + ".json");
  CHECK(run(exe + " check --exit-zero --format json '" + dir + "' >'" + out.string() + "'") == 0);
  const auto report = nlohmann::json::parse(read_file(out));
  const nlohmann::json straggler = job_finding(report, "PTA202");
  REQUIRE(straggler.is_object());
  CHECK(straggler.at("saving_basis") == "ledger+replay");
  CHECK(straggler.at("saving_ms_per_step").get<double>() == doctest::Approx(59.172).epsilon(1e-6));
  CHECK(straggler.at("predicted_step_ms").get<double>() == doctest::Approx(53.384).epsilon(1e-6));
  const nlohmann::json exposed = job_finding(report, "PTA201");
  REQUIRE(exposed.is_object());
  CHECK(exposed.at("saving_basis") == "ledger");
  CHECK(exposed.at("predicted_step_ms").get<double>() == doctest::Approx(112.556 - 13.192).epsilon(1e-6));
  fs::remove(out);
}

TEST_CASE("job: explain shows how a rule's finding gets its predicted step") {
  const std::string exe = "'" PTADVISE_BINARY "'";
  const fs::path out = fs::temp_directory_path() / ("ptadvise-explain-" + std::to_string(::getpid()) + ".txt");
  CHECK(run(exe + " explain straggler-rank >'" + out.string() + "'") == 0);
  const std::string paced = read_file(out);
  CHECK(paced.find("Predicted step (what-if)\n    Replayed with the fix as the transform keep_pace (saving_basis "
                   "ledger+replay).") != std::string::npos);
  CHECK(run(exe + " explain exposed-communication >'" + out.string() + "'") == 0);
  CHECK(read_file(out).find("No transform: the predicted step is the measured step minus the estimated saving") !=
        std::string::npos);
  fs::remove(out);
}
