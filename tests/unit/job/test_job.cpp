// job/: collective names, per-rank digests with exact numbers on hand-built ranks, digest round trips and
// errors, the job rules' fixtures, and the shared multi-rank traces (alignment: test_job_alignment.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "job_fixtures.h"
#include "trace_builder.h"
#include "ptadvise/job.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"

namespace {

using ptadvise::CollectiveType;

using ptadvise::testing::digest_of;
using ptadvise::testing::digests_of;
using ptadvise::testing::job_rules;
using ptadvise::testing::kRulesDir;
using ptadvise::testing::kSkewed;
using ptadvise::testing::pointers;

const std::string kShared = PTADVISE_SHARED_DIR "/traces/";

}  // namespace

TEST_CASE("job: communication kernels and host records of every era are recognised") {
  using ptadvise::communication_host_op;
  using ptadvise::communication_kernel;
  CHECK(communication_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") ==
        CollectiveType::AllReduce);
  CHECK(communication_kernel("void ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") ==
        CollectiveType::AllGather);
  CHECK(communication_kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL") == CollectiveType::ReduceScatter);
  CHECK(communication_kernel("ncclDevKernel_Generic") == CollectiveType::Other);
  CHECK(communication_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") ==
        CollectiveType::SendRecv);
  CHECK(communication_kernel("ncclAllReduceRingLLKernel_sum_f32(ncclColl)") == CollectiveType::AllReduce);
  CHECK(communication_kernel("void deep_ep::intranode::dispatch<8, 768>(int4*, float*)") == CollectiveType::AllToAll);
  CHECK_FALSE(communication_kernel("ampere_sgemm_128x64_nn").has_value());
  CHECK_FALSE(communication_kernel("void at::native::vectorized_elementwise_kernel<4>").has_value());
  CHECK(communication_host_op("gloo:all_reduce") == CollectiveType::AllReduce);
  CHECK(communication_host_op("nccl:_all_gather_base") == CollectiveType::AllGather);
  CHECK(communication_host_op("nccl:all_to_all") == CollectiveType::AllToAll);
  CHECK(communication_host_op("c10d::alltoall_base_") == CollectiveType::AllToAll);
  CHECK(communication_host_op("c10d::_reduce_scatter_base_") == CollectiveType::ReduceScatter);
  CHECK(communication_host_op("c10d::broadcast_") == CollectiveType::Broadcast);
  CHECK(communication_host_op("c10d::barrier") == CollectiveType::Barrier);
  CHECK(communication_host_op("record_param_comms") == CollectiveType::Other);
  CHECK_FALSE(communication_host_op("c10d::wait").has_value());
  CHECK_FALSE(communication_host_op("aten::add").has_value());
  CHECK_FALSE(communication_host_op("DistributedDataParallel.forward").has_value());
}

TEST_CASE("job: nccl-tests bus bandwidth factors") {
  CHECK(ptadvise::bus_bandwidth_factor(CollectiveType::AllReduce, 8) == doctest::Approx(1.75));
  CHECK(ptadvise::bus_bandwidth_factor(CollectiveType::AllGather, 8) == doctest::Approx(0.875));
  CHECK(ptadvise::bus_bandwidth_factor(CollectiveType::ReduceScatter, 4) == doctest::Approx(0.75));
  CHECK(ptadvise::bus_bandwidth_factor(CollectiveType::AllToAll, 2) == doctest::Approx(0.5));
  CHECK(ptadvise::bus_bandwidth_factor(CollectiveType::Broadcast, 8) == doctest::Approx(1.0));
  CHECK(ptadvise::bus_bandwidth_factor(CollectiveType::AllReduce, 1) == doctest::Approx(1.0));
}

// testdata/make_job_traces.py: 4 steps of 200 ms; compute 10..110 ms; the all-reduce (256 MiB) runs 60..160 on
// rank 0 and 80..160 on rank 1, whose clock is 5 s ahead.
// Message sizes come from the trace's own numbers: element counts and dims no real message has must give
// "unknown" (0), never a product that overflowed into a wrapped (or, under UBSan, undefined) value.
TEST_CASE("job: hostile message sizes are unknown, not overflowed") {
  std::string trace =
      R"({"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":2},"traceEvents":[)";
  struct Call {
    const char* name;
    const char* args;
  };
  const Call calls[] = {
      {"allreduce", R"("In msg nelems":1024,"Out msg nelems":1024,"dtype":"Float")"},
      {"allreduce", R"("In msg nelems":3000000000000000000,"Out msg nelems":3000000000000000000,"dtype":"Float")"},
      {"allreduce", R"("Input Dims":[[1099511627775,9000000]],"Input type":["float"])"},
      {"allgather", R"("In msg nelems":200000000000000,"dtype":"Float","Group size":1000000)"},
  };
  for (int step = 0; step < 2; ++step) {
    const int64_t t0 = 1000000 + step * 10000;
    trace += (step ? "," : "") + std::string(R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)") +
             std::to_string(step + 1) + R"(","pid":1,"tid":1,"ts":)" + std::to_string(t0) + R"(,"dur":9999})";
    for (int c = 0; c < 4; ++c) {
      trace += R"(,{"ph":"X","cat":"kernel","name":"ncclDevKernel_)" + std::string(c == 3 ? "AllGather" : "AllReduce") +
               R"(_Sum_f32_RING_LL","pid":0,"tid":20,"ts":)" +
               std::to_string(t0 + 100 + c * 2000) + R"(,"dur":1000,"args":{"device":0,"stream":20,"correlation":)" +
               std::to_string(step * 10 + c + 1) + R"(,"Collective name":")" + calls[c].name +
               R"(","Process Group Name":"0",)" + calls[c].args + "}}";
    }
  }
  trace += "]}";
  auto loaded = ptadvise::load_trace_bytes(trace, "hostile_sizes.json");
  REQUIRE(std::holds_alternative<ptadvise::Timeline>(loaded));
  ptadvise::Timeline timeline = std::move(std::get<ptadvise::Timeline>(loaded));
  ptadvise::Analysis analysis = ptadvise::analyze(timeline);
  const ptadvise::RankDigest digest = ptadvise::make_digest(analysis, {});
  REQUIRE(digest.collectives.size() == 8);
  for (size_t i = 0; i < digest.collectives.size(); ++i) {
    CAPTURE(i);
    CHECK(digest.collectives[i].bytes == (i % 4 == 0 ? 4096 : 0));
  }
}

TEST_CASE("job: host time before a collective counts the step's outermost ops, under Python frames too") {
  // Four steps: 300 us of host work (an outermost op of the step), then an all-reduce kernel. With
  // with_stack the script's frame lies between the marker and the op: the op is still the step's own.
  for (const bool with_stack : {false, true}) {
    CAPTURE(with_stack);
    ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
    for (int step = 0; step < 4; ++step) {
      const double t = 1000.0 * step;
      trace.annotation("ProfilerStep#" + std::to_string(step + 1), t, 1000);
      if (with_stack) trace.python_frame("train.py(10): step", t + 1, 998, step + 1, -1);
      trace.cpu_op("aten::mul", t + 10, 300);
      trace.launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t + 400, 5, t + 420, 100);
    }
    ptadvise::Timeline timeline = trace.load();
    ptadvise::Analysis analysis = ptadvise::analyze(timeline);
    const ptadvise::RankDigest digest = ptadvise::make_digest(analysis, {});
    REQUIRE_FALSE(digest.collectives.empty());
    for (const auto& call : digest.collectives) {
      CAPTURE(call.step);
      CHECK(call.before_host_ns == 300'000);  // was 0 under the frame: the wait was "untraced"
    }
  }
}

TEST_CASE("job: per-rank figures of the hand-built ranks are exact") {
  auto digests = digests_of({kSkewed});
  REQUIRE(digests.size() == 2);
  const auto& r0 = digests[0];
  const auto& r1 = digests[1];
  CHECK(r0.rank == 0);
  CHECK(r0.rank_from_trace);
  CHECK(r0.world_size == 2);
  CHECK(r0.backend == "nccl");
  CHECK(r0.steady_steps == 4);
  CHECK(r0.step_ms == doctest::Approx(200));
  CHECK(r0.compute_ms == doctest::Approx(100));
  CHECK(r0.communication_ms == doctest::Approx(100));
  CHECK(r0.exposed_comm_ms == doctest::Approx(50));  // 110..160
  CHECK(r0.overlap_pct == doctest::Approx(50));
  CHECK(r1.communication_ms == doctest::Approx(80));
  CHECK(r1.exposed_comm_ms == doctest::Approx(50));
  CHECK(r1.overlap_pct == doctest::Approx(37.5));
  REQUIRE(r0.collectives.size() == 4);
  const auto& call = r0.collectives[0];
  CHECK(call.type == CollectiveType::AllReduce);
  CHECK(call.group == "0");
  CHECK(call.group_size == 2);
  CHECK(call.bytes == 256LL * 1024 * 1024);
  CHECK(call.on_device);
  CHECK(call.step == 1);
  CHECK(call.before_ns == 60'000'000);          // from the step's start
  CHECK(call.before_compute_ns == 50'000'000);  // compute from 10 ms on
  REQUIRE(r0.by_type.size() == 1);
  CHECK(r0.by_type[0].count_per_step == doctest::Approx(1));
  CHECK(r0.by_type[0].algbw_gbps == doctest::Approx(268435456.0 / 100e6));
  CHECK(r0.by_type[0].busbw_gbps == doctest::Approx(268435456.0 / 100e6));  // 2(n-1)/n = 1 for n = 2
  CHECK(r1.by_type[0].busbw_gbps == doctest::Approx(268435456.0 / 80e6));
}

TEST_CASE("job: a digest survives the round trip; broken digests are refused with one line") {
  auto digests = digests_of({kSkewed});
  std::ostringstream text;
  ptadvise::write_digest(digests[1], text);
  CHECK(text.str().size() < 8192);  // a few KB
  auto parsed = ptadvise::parse_digest(text.str(), "d.json");
  REQUIRE(std::holds_alternative<ptadvise::RankDigest>(parsed));
  const auto& back = std::get<ptadvise::RankDigest>(parsed);
  CHECK(back.rank == 1);
  CHECK(back.path == digests[1].path);
  CHECK(back.exposed_comm_ms == digests[1].exposed_comm_ms);
  REQUIRE(back.collectives.size() == digests[1].collectives.size());
  CHECK(back.collectives[2].start_ns == digests[1].collectives[2].start_ns);
  CHECK(back.collectives[2].bytes == digests[1].collectives[2].bytes);

  auto error = [](std::string_view json) {
    auto result = ptadvise::parse_digest(json, "d.json");
    REQUIRE(std::holds_alternative<ptadvise::DigestError>(result));
    return std::get<ptadvise::DigestError>(result).message;
  };
  CHECK(error("{\"format\": ").find("d.json: byte ") == 0);
  // A number no double holds fails the JSON parse itself (nlohmann throws out_of_range, not parse_error).
  CHECK(error("{\"format\": \"ptadvise-rank-digest\", \"version\": 1e700000}").find("d.json: not a rank digest: number overflow") == 0);
  CHECK(error("{\"traceEvents\": []}").find("not a ptadvise rank digest") != std::string::npos);
  CHECK(error("{\"format\": \"ptadvise-rank-digest\", \"version\": 9}").find("digest version 9") != std::string::npos);
  CHECK(error("{\"format\": \"ptadvise-rank-digest\", \"version\": 1}").find("not a complete rank digest") !=
        std::string::npos);
  std::string wrong_type = text.str();
  wrong_type.replace(wrong_type.find("\"world_size\":2"), 14, "\"world_size\":\"2\"");
  CHECK(error(wrong_type).find("not a complete rank digest") != std::string::npos);
  // Integers out of their field's range are refused, not converted (1e300 to int64 is undefined behaviour,
  // and INT64_MIN cannot be negated when the timestamp is printed).
  for (const char* value : {"1e300", "-9223372036854775808", "18446744073709551615", "2.5"}) {
    std::string out_of_range = text.str();
    const size_t at = out_of_range.find("\"world_size\":2");
    REQUIRE(at != std::string::npos);
    out_of_range.replace(at, 14, std::string("\"world_size\":") + value);
    CAPTURE(value);
    const std::string message = error(out_of_range);
    CHECK(message.find("d.json: ") == 0);
    CHECK(message.find("\"world_size\"") != std::string::npos);
  }
}

TEST_CASE("job: a digest's join model survives the round trip; a damaged one is refused with one line") {
  auto digests = digests_of({kSkewed});
  ptadvise::RankDigest digest = digests[0];
  const size_t n = digest.collectives.size();
  REQUIRE(n == 4);
  ptadvise::RankJoin& join = digest.join;
  join.available = true;
  join.in_window = {0, 1, 1, 1};
  join.step_numbers = {2, 3};
  join.measured = {1, 0};
  join.measured_period_ns = {200000000, 199000000};
  join.predicted_step_ms = 150.5;
  join.exact = false;
  for (ptadvise::whatif::JoinModel* model : {&join.unchanged, &join.fixed}) {
    model->arrival.resize(n);
    model->arrival[2] = {1700000260000000, {{1, 120000000}}};
    model->arrival[3] = {ptadvise::whatif::kNoTime, {{1, 300000000}, {2, 100000000}}};
    model->steps = {{0, {1700000200000000, {}}, {ptadvise::whatif::kNoTime, {{1, 50000000}}}, false},
                    {1, {1700000400000000, {{2, 40000000}}}, {1700000410000000, {}}, true}};
  }
  join.fixed.arrival[2].free_ns -= 5000000;
  std::ostringstream text;
  ptadvise::write_digest(digest, text);
  auto parsed = ptadvise::parse_digest(text.str(), "d.json");
  REQUIRE(std::holds_alternative<ptadvise::RankDigest>(parsed));
  const ptadvise::RankJoin& back = std::get<ptadvise::RankDigest>(parsed).join;
  CHECK(back.available);
  CHECK(back.in_window == join.in_window);
  CHECK(back.step_numbers == join.step_numbers);
  CHECK(back.measured == join.measured);
  CHECK(back.measured_period_ns == join.measured_period_ns);
  CHECK(back.predicted_step_ms == 150.5);
  CHECK_FALSE(back.exact);
  REQUIRE(back.fixed.arrival.size() == n);
  CHECK(back.fixed.arrival[2].free_ns == 1700000255000000);
  CHECK(back.unchanged.arrival[0].free_ns == ptadvise::whatif::kNoTime);
  REQUIRE(back.unchanged.arrival[3].terms.size() == 2);
  CHECK(back.unchanged.arrival[3].terms[1].source == 2);
  CHECK(back.unchanged.arrival[3].terms[1].delay_ns == 100000000);
  REQUIRE(back.unchanged.steps.size() == 2);
  CHECK(back.unchanged.steps[1].gpu_span_only);
  CHECK(back.unchanged.steps[1].host_start.terms[0].delay_ns == 40000000);
  // Evaluated: the latest of the free time and each known end plus its delay.
  CHECK(back.unchanged.arrival[3].at({0, 10, 20, 0}) == 300000010);
  CHECK(back.unchanged.arrival[3].at({0, ptadvise::whatif::kNoTime, 250000000, 0}) == 350000000);

  auto error = [&](const std::string& from, const std::string& to) {
    std::string damaged = text.str();
    const size_t at = damaged.find(from);
    REQUIRE(at != std::string::npos);
    damaged.replace(at, from.size(), to);
    auto result = ptadvise::parse_digest(damaged, "d.json");
    REQUIRE(std::holds_alternative<ptadvise::DigestError>(result));
    const std::string message = std::get<ptadvise::DigestError>(result).message;
    CHECK(message.find("d.json: ") == 0);
    CHECK(message.find('\n') == std::string::npos);
    return message;
  };
  // A term naming a collective the digest does not have, a delay that could overflow a sum, a model that
  // leaves out a collective or a step: refused, never evaluated.
  CHECK(error("[1,300000000,2,100000000]", "[1,300000000,4,100000000]").find("names collective 4 of 4") != std::string::npos);
  CHECK(error("[1,300000000,2,100000000]", "[1,300000000,2,4611686018427387904]").find("out of range") != std::string::npos);
  CHECK(error("\"in_window\":[1,2,3]", "\"in_window\":[1,2,9]").find("in_window names collective 9") != std::string::npos);
  CHECK(error("[null,[]],[null,[]],", "[null,[]],").find("every collective's arrival") != std::string::npos);
  CHECK(error("[[2,true,200000000],[3,false,199000000]]", "[[2,true,200000000]]").find("every step") != std::string::npos);
}

TEST_CASE("job: which traces form a job") {
  std::vector<ptadvise::RankDigest> digests(5);
  for (int i = 0; i < 4; ++i) {
    digests[static_cast<size_t>(i)].path = "/runs/a/rank-" + std::to_string(i) + ".json";
    digests[static_cast<size_t>(i)].rank = i;
    digests[static_cast<size_t>(i)].world_size = 4;
  }
  digests[4].path = "/runs/a/notes.json";  // no rank: on its own
  auto groups = ptadvise::group_jobs(digests);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].members == std::vector<size_t>{0, 1, 2, 3});
  CHECK(groups[1].members == std::vector<size_t>{4});
  digests[3].rank = 2;  // a rank twice: not one job
  groups = ptadvise::group_jobs(digests);
  CHECK(groups.size() == 5);
  CHECK(groups[0].note.find("occurs more than once") != std::string::npos);
  digests[3].rank = 3;
  digests[3].path = "/runs/b/rank-3.json";  // TensorBoard layout: another run's directory
  groups = ptadvise::group_jobs(digests);
  CHECK(groups.size() == 3);
}

TEST_CASE("job: directories are searched recursively (TensorBoard's logdir/run/ layout)") {
  auto listed = ptadvise::list_trace_inputs({PTADVISE_SOURCE_DIR "/rules.d/job/slow-collective.tests"});
  REQUIRE(std::holds_alternative<std::vector<ptadvise::TraceInput>>(listed));
  const auto& files = std::get<std::vector<ptadvise::TraceInput>>(listed);
  CHECK(files.size() == 4);  // fire/rank-0, fire/rank-1, quiet/rank-0, quiet/rank-1
  for (const auto& file : files) CHECK(file.in_directory);
  auto none = ptadvise::list_trace_inputs({PTADVISE_SOURCE_DIR "/job/include"});
  REQUIRE(std::holds_alternative<ptadvise::LoadError>(none));
  CHECK(std::get<ptadvise::LoadError>(none).message.find("no trace files") != std::string::npos);
}

TEST_CASE("job rules: documented, with firing and quiet fixtures, in rules.d/job") {
  auto rules = job_rules();
  REQUIRE(rules.infos().size() == 6);
  std::set<std::string> ids;
  for (size_t r = 0; r < rules.infos().size(); ++r) {
    const auto& info = rules.infos()[r];
    INFO(info.id << " " << info.file);
    CHECK(ids.insert(info.id).second);
    CHECK(std::filesystem::path(info.file).filename().string() == info.name + ".yaml");
    CHECK(std::filesystem::path(info.file).parent_path().filename().string() == "job");
    CHECK_FALSE(info.docs.what.empty());
    CHECK_FALSE(info.docs.fix.empty());
    for (const auto& threshold : info.thresholds) CHECK_FALSE(threshold.doc.empty());
    bool fires = false, quiet = false;
    for (const auto& test : ptadvise::job_rule_tests(rules, r)) (test.findings > 0 ? fires : quiet) = true;
    CHECK(fires);
    CHECK(quiet);
  }
  // The per-trace loader leaves job rules alone.
  auto per_trace = ptadvise::load_rules({kRulesDir});
  REQUIRE(std::holds_alternative<ptadvise::RuleSet>(per_trace));
  CHECK(std::get<ptadvise::RuleSet>(per_trace).find("PTA202") == nullptr);
}

TEST_CASE("job rules report exactly what their fixtures declare") {
  auto rules = job_rules();
  for (size_t r = 0; r < rules.infos().size(); ++r) {
    const auto& info = rules.infos()[r];
    for (const auto& test : ptadvise::job_rule_tests(rules, r)) {
      INFO(info.id << " on " << test.traces.front());
      auto digests = digests_of(test.traces);
      auto ranks = pointers(digests);
      auto job = ptadvise::analyze_job(ranks, test.traces.front());
      std::vector<std::string> skip;
      for (const auto& other : rules.infos()) {
        if (other.id != info.id) skip.push_back(other.id);
      }
      std::map<std::string, std::map<std::string, double>> thresholds;
      if (!test.thresholds.empty()) thresholds[info.id] = test.thresholds;
      auto findings = ptadvise::evaluate_job(rules, job, ranks, thresholds, skip);
      std::string messages;
      for (const auto& f : findings) messages += "\n  " + f.message;
      INFO("findings:" << messages);
      CHECK(findings.size() == test.findings);
      if (findings.empty() || findings.size() != test.findings) continue;
      if (!test.ranks.empty()) CHECK(findings[0].ranks == test.ranks);
      if (!test.message_contains.empty()) CHECK(findings[0].message.find(test.message_contains) != std::string::npos);
      for (const auto& [name, value] : test.numbers) {
        const std::string& metric = name;  // INFO captures it in a lambda; Clang 14 cannot capture a binding
        INFO(metric);
        if (name == "saving_ms_per_step") {
          CHECK(findings[0].saving_ms_per_step == doctest::Approx(value).epsilon(0.001));
        } else if (name == "saving_pct") {
          CHECK(findings[0].saving_pct == doctest::Approx(value).epsilon(0.001));
        } else {
          FAIL_CHECK("unknown number " << name << " (saving_ms_per_step, saving_pct)");
        }
      }
    }
  }
}

// The two sampled ranks of HTA's 128-rank job (the same steps, 551 and 552) and the NCCL parser trace.
TEST_CASE("job: the shared multi-rank traces") {
  const std::string rank0 = kShared + "HTA__tests__data__timeline_analysis__sampled_rank-0.json.gz";
  const std::string rank1 = kShared + "HTA__tests__data__trace_filter__sampled_rank-1.json.gz";
  const std::string nccl = kShared + "HTA__tests__data__nccl_parser_config__nccl_data.json.gz";
  if (!std::filesystem::exists(rank0) || !std::filesystem::exists(nccl)) {
    MESSAGE("skipped: the shared traces are absent (they live beside the project)");
    return;
  }
  auto digests = digests_of({rank0, rank1});
  REQUIRE(digests.size() == 2);
  for (const auto& d : digests) {
    INFO(d.path);
    CHECK(d.world_size == 128);
    CHECK(d.backend == "nccl");
    CHECK(d.has_gpu);
  }
  CHECK(digests[0].rank == 0);
  CHECK(digests[1].rank == 1);
  auto groups = ptadvise::group_jobs(digests);
  REQUIRE(groups.size() == 1);  // the same directory, world size and backend: one job (2 of its 128 ranks)
  auto job = ptadvise::analyze_job(pointers(digests), groups[0].name);
  CHECK(job.world_size == 128);
  // Independently: the sum of the ncclKernel durations over the two steps, and the part of them outside the
  // union of the other kernels, halved (a short Python script over the JSON gives the same numbers).
  CHECK(digests[0].steady_steps == 2);
  CHECK(digests[0].communication_ms == doctest::Approx(198.0995));
  CHECK(digests[0].exposed_comm_ms == doctest::Approx(168.4915));
  CHECK(digests[1].communication_ms == doctest::Approx(189.5265));
  CHECK(digests[1].exposed_comm_ms == doctest::Approx(151.7615));
  // The kernels are all SendRecv; the host records name the collectives.
  std::map<CollectiveType, double> per_step;
  for (const auto& t : digests[0].by_type) per_step[t.type] = t.count_per_step;
  CHECK(per_step[CollectiveType::AllToAll] == doctest::Approx(2));
  CHECK(per_step[CollectiveType::AllReduce] == doctest::Approx(2));
  CHECK(per_step[CollectiveType::AllGather] == doctest::Approx(1));
  CHECK(digests[0].collectives[2].bytes == 19618307LL * 4);  // nccl:all_reduce Input Dims [[19618307]] float
  CHECK(job.aligned_collectives == 10);
  CHECK(job.unmatched_collectives == 0);

  // Kineto 2024 with record_param_comms args (group "0" of 2 ranks) and NCCL 2.17 kernel names.
  auto parser = digest_of(nccl);
  CHECK(parser.world_size == 2);
  CHECK(parser.rank == 0);
  CHECK(parser.steady_steps == 3);
  CHECK(parser.communication_ms == doctest::Approx(15.6254977).epsilon(1e-6));
  CHECK(parser.exposed_comm_ms == doctest::Approx(13.1864893).epsilon(1e-6));
  std::map<CollectiveType, ptadvise::CollectiveTypeStats> types;
  for (const auto& t : parser.by_type) types[t.type] = t;
  CHECK(types[CollectiveType::AllReduce].count_per_step == doctest::Approx(5));
  CHECK(types[CollectiveType::Broadcast].count_per_step == doctest::Approx(2));
  CHECK(types[CollectiveType::AllReduce].group_size == 2);
  CHECK(types[CollectiveType::AllReduce].busbw_gbps == doctest::Approx(6.5583880).epsilon(1e-6));
  CHECK(parser.collectives.front().group == "0");
}

namespace {

// A minimal job rule over rank: `extra` lines go after `over` (line 5 on), `tail` at the end.
std::string job_rule_text(const std::string& id, const std::string& name, const std::string& extra,
                          const std::string& tail = "") {
  return "id: " + id + "\nname: " + name + "\nscope: job\nover: rank\n" + extra + R"(severity: info
tags: [distributed]
summary: s
fix: f
docs: {what: w, why: y, example: e, fix: f}
when:
  all:
    - compute_ms > 0
message: m
saving: {ms_per_step: compute_ms, method: m, confidence: low}
)" + tail;
}

}  // namespace

TEST_CASE("job rules: `lone_rank` says which rules also judge one rank of a larger job") {
  const auto rules = job_rules();
  CHECK(rules.judges_lone_rank("PTA201"));  // exposed communication: one rank's own measure
  CHECK_FALSE(rules.judges_lone_rank("PTA202"));  // straggler: needs the other ranks
  CHECK_FALSE(rules.judges_lone_rank("PTA999"));
  const std::string rule = job_rule_text("PTA299", "lone", "lone_rank: sometimes\n");
  auto loaded = ptadvise::load_job_rule_text(rule, "lone.yaml");
  REQUIRE(std::holds_alternative<ptadvise::JobRuleError>(loaded));
  CHECK(std::get<ptadvise::JobRuleError>(loaded).message.find("lone.yaml:5:") == 0);
  CHECK(std::get<ptadvise::JobRuleError>(loaded).message.find("expected true or false, got 'sometimes'") !=
        std::string::npos);
  std::string yes = rule;
  yes.replace(yes.find("sometimes"), 9, "true");
  auto accepted = ptadvise::load_job_rule_text(yes, "lone.yaml");
  REQUIRE(std::holds_alternative<ptadvise::JobRuleSet>(accepted));
  CHECK(std::get<ptadvise::JobRuleSet>(accepted).judges_lone_rank("PTA299"));
}


// A job rule's transform is keep_pace, on a rule over rank or ranks; anything else is a one-line error.
TEST_CASE("job rules: the keep_pace transform and its errors") {
  const std::string rule =
      job_rule_text("PTA298", "pace", "", "transform:\n  apply: [keep_pace]\n  method: the rank keeps pace\n");
  auto loaded = ptadvise::load_job_rule_text(rule, "pace.yaml");
  REQUIRE(std::holds_alternative<ptadvise::JobRuleSet>(loaded));
  const ptadvise::RuleInfo* info = std::get<ptadvise::JobRuleSet>(loaded).find("PTA298");
  REQUIRE(info != nullptr);
  CHECK(info->transform == "keep_pace");
  CHECK(info->transform_method == "the rank keeps pace");
  auto error_of = [](const std::string& text) {
    auto result = ptadvise::load_job_rule_text(text, "pace.yaml");
    REQUIRE(std::holds_alternative<ptadvise::JobRuleError>(result));
    return std::get<ptadvise::JobRuleError>(result).message;
  };
  std::string other = rule;
  other.replace(other.find("[keep_pace]"), 11, "[remove]");
  CHECK(error_of(other).find("pace.yaml:16:10: transform.apply: expected [keep_pace]") == 0);
  std::string over_job = rule;
  over_job.replace(over_job.find("over: rank"), 10, "over: job");
  CHECK(error_of(over_job).find("the rule must be over rank or ranks") != std::string::npos);
  std::string unknown = rule;
  unknown.replace(unknown.find("  method: the"), 13, "  methods: the");
  CHECK(error_of(unknown).find("transform.methods: unknown key; expected apply, method") != std::string::npos);
  // Found by fuzz_rules: the YAML parser quotes the character it cannot read, a newline included.
  std::ifstream seed(PTADVISE_SOURCE_DIR "/tests/fuzz/seeds/rules/regression_job_newline_escape.yaml", std::ios::binary);
  std::ostringstream bytes;
  bytes << seed.rdbuf();
  const std::string message = error_of(bytes.str());
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message == "pace.yaml:6:1: unknown escape character: \\n");
}
