// Each primitive of the rule language on a small hand-built trace with known answers.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ptadvise/analysis.h"
#include "ptadvise/rules.h"
#include "trace_builder.h"

namespace {

using ptadvise::Analysis;
using ptadvise::EvaluateOptions;
using ptadvise::EventIndex;
using ptadvise::Finding;
using ptadvise::IdleCause;
using ptadvise::IdleGap;
using ptadvise::Timeline;

// Two steps of 1000 µs on thread 1, one A100:
//   step 1: aten::to > aten::copy_ > cudaMemcpyAsync -> Memcpy HtoD 4096 B (130..132)
//           aten::mm (fp16, dims 8x12 @ 12x16) -> gemm kernel 100 µs; aten::add -> 5 µs kernel
//           aten::item > aten::_local_scalar_dense > cudaStreamSynchronize
//   step 2: the same copy (8192 B), aten::mm with dims multiple of 8 -> gemm kernel 50 µs, aten::add -> 5 µs
Timeline make_trace() {
  ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
  trace.device(0, "NVIDIA A100-SXM4-40GB", 8, 0, 40LL << 30);
  for (int step = 0; step < 2; ++step) {
    const double base = step * 1000.0;
    trace.annotation("ProfilerStep#" + std::to_string(step + 1), base, 1000);
    trace.cpu_op("aten::to", base + 100, 60);
    trace.cpu_op("aten::copy_", base + 110, 40);
    int64_t copy = trace.next_correlation();
    trace.runtime("cudaMemcpyAsync", base + 115, 10, copy);
    trace.memcpy("HtoD", "Pageable", "Device", base + 130, 2, step == 0 ? 4096 : 8192, copy);
    std::string dims = step == 0 ? "[[8, 12], [12, 16]]" : "[[8, 16], [16, 16]]";
    trace.cpu_op("aten::mm", base + 200, 60,
                 "\"Input type\": [\"c10::Half\", \"c10::Half\"], \"Input Dims\": " + dims);
    trace.launch("ampere_fp16_s16816gemm_fp16_128x128", base + 210, 10, base + 230, step == 0 ? 100 : 50);
    trace.cpu_op("aten::add", base + 300, 20);
    trace.launch("elementwise_kernel", base + 305, 10, base + 335, 5);
    if (step == 0) {
      trace.cpu_op("aten::item", base + 400, 100);
      trace.cpu_op("aten::_local_scalar_dense", base + 410, 80);
      trace.runtime("cudaStreamSynchronize", base + 420, 60, trace.next_correlation());
    }
  }
  return trace.load();
}

const std::string kHeader =
    "id: PTA901\nname: probe\nseverity: warning\ntags: [probe]\nsummary: s\nfix: f\n"
    "docs: {what: w, why: y, example: e, fix: f}\n";

ptadvise::RuleSet rules_from(const std::string& body, const std::string& header = kHeader) {
  auto loaded = ptadvise::load_rule_text(header + body, "probe.yaml");
  if (auto* error = std::get_if<ptadvise::RuleError>(&loaded)) FAIL(error->message);
  return std::move(std::get<ptadvise::RuleSet>(loaded));
}

// Evaluates a rule body (select/group/metrics/when/message) with a default saving.
std::vector<Finding> run(const Analysis& analysis, const std::string& body, const EvaluateOptions& options = {}) {
  std::string text = body;
  if (text.find("saving:") == std::string::npos) text += "saving: {ms_per_step: time_ms, method: own time}\n";
  if (text.find("message:") == std::string::npos) text += "message: \"{count}\"\n";
  // The toy trace's savings are microseconds: these tests are about the primitives, not the noise floor.
  EvaluateOptions without_floor = options;
  without_floor.thresholds["PTA901"].emplace("min_saving_ms", 0.0);
  without_floor.thresholds["PTA901"].emplace("min_saving_pct", 0.0);
  return ptadvise::evaluate(rules_from(text), analysis, without_floor);
}

EventIndex find_event(const Timeline& timeline, std::string_view name, int occurrence = 0) {
  for (EventIndex i = 0; i < timeline.events.size(); ++i) {
    if (timeline.name(i) == name && occurrence-- == 0) return i;
  }
  FAIL("no event " << name);
  return ptadvise::kNone;
}

struct Fixture {
  Timeline timeline = make_trace();
  Analysis analysis = ptadvise::analyze(timeline);
};

}  // namespace

TEST_CASE("the hand-built trace has two steps") {
  Fixture f;
  REQUIRE(f.analysis.steps.size() == 2);
  CHECK(f.analysis.median_step_ns() == doctest::Approx(1000e3));
}

TEST_CASE("selection by kind and name: globs, RE2 regexes, exclusions") {
  Fixture f;
  auto findings = run(f.analysis, "select: {k: {kind: kernel, name: {regex: \"s16816gemm\"}}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.075));  // (100 + 50) µs over 2 steps
  CHECK(findings[0].steps_present_pct == 100);
  CHECK(findings[0].site.detail == "whole trace");

  findings = run(f.analysis, "select: {k: {kind: [kernel, memcpy], name: [\"*gemm*\", \"Memcpy HtoD*\"]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 2);

  findings = run(f.analysis, "select: {k: {kind: kernel, exclude_name: \"*gemm*\"}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.005));

  CHECK(run(f.analysis, "select: {k: {kind: runtime, name: \"nothing*\"}}\n").empty());
}

TEST_CASE("time_ms counts nested events of a selection once and adds up disjoint ones") {
  Fixture f;
  // aten::_local_scalar_dense (80 µs) runs inside aten::item (100 µs) in step 0: the thread spent 100 µs.
  auto findings = run(f.analysis, "select: {k: {kind: cpu_op, name: [aten::item, aten::_local_scalar_dense]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.05));  // 100 µs over 2 steps, not 180 µs
  // Disjoint ops on one thread: their sum, (60 + 20) µs in each of the 2 steps.
  findings = run(f.analysis, "select: {k: {kind: cpu_op, name: [aten::mm, aten::add]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.08));
  // GPU events of two kinds that do not overlap: their sum, (2 + 100 + 2 + 50) µs over 2 steps.
  findings = run(f.analysis, "select: {k: {kind: [kernel, memcpy], name: [\"*gemm*\", \"Memcpy HtoD*\"]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.077));
}

TEST_CASE("selection by kernel family (data/kernel_families.yaml)") {
  Fixture f;
  // ampere_fp16_s16816gemm_fp16_128x128 runs on Tensor Cores; elementwise_kernel is elementwise.
  auto findings = run(f.analysis, "select: {k: {family: matmul-tensor-core}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.075));
  findings = run(f.analysis, "select: {k: {kind: kernel, family: [elementwise, matmul-simt]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.005));
  findings = run(f.analysis, "select: {k: {kind: kernel, exclude_family: [matmul-tensor-core, communication]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.005));
  CHECK(run(f.analysis, "select: {k: {family: communication}}\n").empty());
}

TEST_CASE("a selection of the warm-up steps is measured per warm-up step, not per steady step") {
  // PyTorch 1.13 on a CPU (an EmbeddingBag model with Adam): steps of 26, 10 and 9.4 ms, then 2.1 and 1.7.
  ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Legacy);
  const double periods[] = {26000, 10000, 9400, 2100, 1700};
  double at = 0;
  for (int s = 0; s < 5; ++s) {
    trace.cpu_op("ProfilerStep#" + std::to_string(s + 1), at, periods[s]);
    trace.cpu_op("aten::embedding_bag", at + 10, periods[s] / 2);
    trace.cpu_op("aten::addmm", at + 20 + periods[s] / 2, 50);
    at += periods[s];
  }
  Timeline timeline = trace.load();
  Analysis analysis = ptadvise::analyze(timeline);
  REQUIRE(analysis.warmup_step_count() == 3);
  REQUIRE(analysis.steady_step_count() == 2);
  auto findings = run(analysis, "select: {w: {kind: cpu_op, name: \"aten::*\", in_warmup: true}}\n");
  REQUIRE(findings.size() == 1);
  // Over the 2 steady steps these were 3 ops per step "in 150% of steps".
  CHECK(findings[0].count_per_step == 2);
  CHECK(findings[0].steps_present_pct == 100);
  CHECK(findings[0].time_ms_per_step == doctest::Approx((13000 + 5000 + 4700 + 150) / 3.0 / 1000.0));
}

TEST_CASE("selection by duration and step membership") {
  Fixture f;
  auto findings = run(f.analysis, "select: {k: {kind: kernel, max_dur: 10us}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  findings = run(f.analysis, "select: {k: {kind: kernel, min_dur: 100us}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 0.5);
  CHECK(findings[0].steps_present_pct == 50);
  findings = run(f.analysis, "select: {k: {kind: memcpy, in_step: true, after_first_step: true}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 0.5);
  CHECK(findings[0].evidence.at(0).step_number == 2);
}

TEST_CASE("selection by args predicates") {
  Fixture f;
  auto count = [&](const std::string& args) {
    auto findings = run(f.analysis, "select: {k: {args: [" + args + "]}}\n");
    return findings.empty() ? 0.0 : findings[0].count_per_step * 2;
  };
  CHECK(count("{key: bytes, ge: 4KiB}") == 2);
  CHECK(count("{key: bytes, gt: 4KiB}") == 1);
  CHECK(count("{key: bytes, eq: 8192}") == 1);
  CHECK(count("{key: Input type, contains: Half}") == 2);
  CHECK(count("{key: Input Dims, dim_not_multiple_of: 8}") == 1);
  CHECK(count("{key: \"Input Dims[1]\", glob: \"*12*\"}") == 1);
  CHECK(count("{key: \"Input Dims[2]\", nonempty: true}") == 0);
  CHECK(count("{key: \"Input type[0]\", eq: c10::Half}") == 2);
  // CPU ops without an `Input type`: all but the two aten::mm
  auto findings = run(f.analysis, "select: {k: {kind: cpu_op, args: [{key: Input type, missing: true}]}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step * 2 == 8);
}

TEST_CASE("selection by ancestry: inside and not inside") {
  Fixture f;
  auto findings = run(f.analysis, "select: {k: {kind: memcpy, inside: \"aten::to\"}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 1);
  findings = run(f.analysis, "select: {k: {kind: kernel, not_inside: \"aten::mm\"}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].time_ms_per_step == doctest::Approx(0.005));
  findings = run(f.analysis, "select: {k: {kind: runtime, inside: {regex: \"^aten::item$\"}}}\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].count_per_step == 0.5);
  CHECK(run(f.analysis, "select: {k: {kind: cpu_op, name: \"aten::mm\", inside: \"aten::to\"}}\n").empty());
}

TEST_CASE("sequences: followed by, preceded by, contains, within a step, unions") {
  Fixture f;
  const std::string others = "  mm: {kind: cpu_op, name: \"aten::mm\"}\n  add: {kind: cpu_op, name: \"aten::add\"}\n"
                             "  sync: {kind: runtime, name: cudaStreamSynchronize}\n";
  auto count = [&](const std::string& selector) {
    auto findings = run(f.analysis, "select:\n  k: " + selector + "\n" + others);
    return findings.empty() ? 0.0 : findings[0].count_per_step * 2;
  };
  // aten::mm ends at 260 µs, aten::add starts at 300 µs: 40 µs apart
  CHECK(count("{name: \"aten::add\", preceded_by: {select: mm, within: 50us}}") == 2);
  CHECK(count("{name: \"aten::add\", preceded_by: {select: mm, within: 30us}}") == 0);
  CHECK(count("{name: \"aten::mm\", followed_by: {select: add, within: 50us}}") == 2);
  CHECK(count("{name: \"aten::mm\", not_followed_by: {select: add, within: 30us}}") == 2);
  CHECK(count("{name: \"aten::item\", contains: sync}") == 1);
  CHECK(count("{name: \"aten::mm\", contains: sync}") == 0);
  // a kernel launched after another kernel of the same step: the elementwise kernels
  CHECK(count("{kind: kernel, preceded_by: {select: launches, within: step}}\n  launches: {kind: kernel}") == 2);
  CHECK(count("{union: [mm, add]}") == 4);
}

TEST_CASE("grouping by site, evidence and the message template") {
  Fixture f;
  auto findings = run(f.analysis,
                      "select: {copies: {kind: memcpy}}\n"
                      "group: {by: [op, bytes]}\n"
                      "message: \"{site.name} x{count} by {site.op_chain} ({bytes:bytes}/step, {time_ms} ms)\"\n");
  REQUIRE(findings.size() == 2);
  for (const auto& finding : findings) {
    CHECK(finding.site.op == "aten::copy_");
    CHECK(finding.site.op_chain == std::vector<std::string>{"aten::to", "aten::copy_"});
    CHECK(finding.count_per_step == 0.5);
    REQUIRE(finding.evidence.size() == 1);
    CHECK(finding.evidence[0].event == "Memcpy HtoD (Pageable -> Device)");
    CHECK(finding.evidence[0].track == "GPU 0 stream 7");
    CHECK(finding.evidence[0].dur_ns == 2000);
  }
  CHECK(findings[0].message == "Memcpy HtoD (Pageable -> Device), 4 KiB x0.50 by aten::to > aten::copy_ (2 KiB/step, 0.001 ms)");
  CHECK(findings[0].evidence[0].step_number == 1);
  CHECK(findings[1].site.detail == "Memcpy HtoD (Pageable -> Device), 8 KiB");

  findings = run(f.analysis, "select: {k: {kind: kernel}}\ngroup: {by: [kernel]}\n");
  REQUIRE(findings.size() == 2);
  CHECK(findings[0].site.kernel == "ampere_fp16_s16816gemm_fp16_128x128");
  CHECK(findings[0].site.op == "aten::mm");
  CHECK(findings[0].evidence.size() == 2);
  CHECK(findings[0].evidence[0].dur_ns == 100000);  // longest first
}

TEST_CASE("metrics: ratios, sums, built-in values, percent companions") {
  Fixture f;
  auto findings = run(f.analysis,
                      "select:\n  k: {kind: kernel}\n  gemm: {kind: kernel, name: \"*gemm*\"}\n"
                      "metrics:\n  gemm_ms: {time: gemm}\n  share: {ratio: [gemm_ms, time_ms]}\n"
                      "  both: {sum: [gemm_ms, gemm_ms]}\n  longest: {max: gemm}\n  present: {steps_present: gemm}\n"
                      "message: \"{share} {both} {gemm_ms_pct} {longest} {present} {steps} {has_gpu} "
                      "{compute_capability} {median_step_ms} {max_step_ms}\"\n");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].message == "0.94 0.15 7.50 0.10 100 2 1 8 1 1");
}

TEST_CASE("conditions and thresholds, with overrides") {
  Fixture f;
  const std::string body =
      "thresholds: {min_count: {value: 1, doc: why}}\n"
      "select: {k: {kind: kernel}}\n"
      "when: {all: [\"count >= min_count\", {any: [has_gpu, \"steps > 5\"]}, {not: \"time_ms < 0.01\"}]}\n";
  CHECK(run(f.analysis, body).size() == 1);
  EvaluateOptions strict;
  strict.thresholds["PTA901"]["min_count"] = 3;
  CHECK(run(f.analysis, body, strict).empty());
  EvaluateOptions severity;
  severity.severities["PTA901"] = ptadvise::Severity::Error;
  auto findings = run(f.analysis, body, severity);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].severity == ptadvise::Severity::Error);
  EvaluateOptions skip;
  skip.skip = {"probe"};
  CHECK(run(f.analysis, body, skip).empty());
  EvaluateOptions only;
  only.only = {"other-rule"};
  CHECK(run(f.analysis, body, only).empty());
  only.only = {"PROBE"};  // tags match too, case-insensitively
  CHECK(run(f.analysis, body, only).size() == 1);
  // an undefined ratio never passes a comparison
  CHECK(run(f.analysis, "select: {k: {kind: kernel}, none: {kind: sync}}\nmetrics: {r: {ratio: [count, n]}, "
                        "n: {count: none}}\nwhen: \"r >= 0\"\n").empty());
}

TEST_CASE("a site charged idle time is located at the culprit charged the most, not at its first event") {
  Fixture f;
  const EventIndex item = find_event(f.timeline, "aten::item");
  const EventIndex add = find_event(f.timeline, "aten::add", 1);
  // A hand-made ledger: 200 µs of cpu-work charged to aten::item in step 0, 100 µs to aten::add in step 1.
  f.analysis.idle = {
      IdleGap{0, 0, 400000, 600000, IdleCause::CpuWork, false, false, item},
      IdleGap{0, 1, 1500000, 1600000, IdleCause::CpuWork, false, false, add},
  };
  // One group (no Python stacks: every event's source is empty); its first event in time is aten::add.
  const std::string body =
      "select: {work: {kind: cpu_op, name: [aten::item, aten::add]}}\ngroup: {by: [source]}\n"
      "metrics: {idle_ms: {idle: {causes: [cpu-work], culprits: site}}}\n"
      "saving: {ms_per_step: idle_ms, method: idle}\nmessage: \"{idle_culprits}\"\n";
  auto findings = run(f.analysis, body);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].saving_ms_per_step == doctest::Approx(0.150));  // 300 µs over 2 steps
  CHECK(findings[0].message == "aten::item 0.10 ms/step, aten::add 0.05 ms/step");
  CHECK(findings[0].site.op == "aten::item");
  CHECK(findings[0].site.detail == "aten::item");
  // Evidence: the events charged, the site's culprit first; not the group's longest, which would add
  // step 0's aten::add, charged nothing.
  REQUIRE(findings[0].evidence.size() == 2);
  CHECK(findings[0].evidence[0].event == "aten::item");
  CHECK(findings[0].evidence[1].event == "aten::add");
  CHECK(findings[0].evidence[1].step == 1);
}

TEST_CASE("{idle_causes} names every cause a metric counts, the last ones of the list too") {
  Fixture f;
  const EventIndex item = find_event(f.timeline, "aten::item");
  // One gap of each cause, each longer than the one before: the causes late in the list come first. (A
  // five-slot table once summed the last three past its end.)
  f.analysis.idle.clear();
  int64_t start = 100000;
  for (size_t c = 0; c < ptadvise::kIdleCauseCount; ++c) {
    const int64_t length = 10000 * static_cast<int64_t>(c + 1);
    f.analysis.idle.push_back(IdleGap{0, 0, start, start + length, ptadvise::kIdleCauses[c], false, false, item});
    start += length;
  }
  // `any` leaves out the causes no fix of the program removes; named, they count.
  auto findings = run(f.analysis, "select: {k: {kind: kernel}}\n"
                                  "metrics: {idle_ms: {idle: {causes: [any, graph-capture, external-wait, warm-up]}}}\n"
                                  "saving: {ms_per_step: idle_ms, method: idle}\nmessage: \"{idle_causes}\"\n");
  REQUIRE(findings.size() == 1);
  // 80, 70 and 60 µs over the fixture's 2 steps.
  CHECK(findings[0].message == "warm-up 0.04 ms/step, external-wait 0.035 ms/step, graph-capture 0.03 ms/step");
}

TEST_CASE("idle time from the ledger: culprits, refill, stretches, claims") {
  Fixture f;
  const EventIndex scalar = find_event(f.timeline, "aten::_local_scalar_dense");
  const EventIndex item = find_event(f.timeline, "aten::item");
  const EventIndex add = find_event(f.timeline, "aten::add", 1);
  // A hand-made ledger: a sync gap charged to _local_scalar_dense, the refill after it (cpu-work on the way
  // to the next launch), and an unrelated 100 µs cpu-work gap in step 2.
  f.analysis.idle = {
      IdleGap{0, 0, 460000, 480000, IdleCause::Sync, false, false, scalar},
      IdleGap{0, 0, 480000, 510000, IdleCause::CpuWork, true, true, item},
      IdleGap{0, 1, 1500000, 1600000, IdleCause::CpuWork, false, false, add},
  };
  const std::string select = "select: {syncs: {kind: cpu_op, name: \"aten::item\"}}\ngroup: {by: [op]}\n";
  auto idle_of = [&](const std::string& idle) {
    auto findings = run(f.analysis, select + "metrics: {idle_ms: {idle: " + idle + "}}\n" +
                                        "saving: {ms_per_step: idle_ms, method: idle}\n");
    return findings.empty() ? -1.0 : findings[0].saving_ms_per_step;
  };
  CHECK(idle_of("{causes: [sync], culprits: site}") == doctest::Approx(0.010));   // 20 µs over 2 steps
  CHECK(idle_of("{causes: [sync], culprits: site, refill: true}") == doctest::Approx(0.025));
  {
    // The refill is bounded: host work after the sync that launches nothing is its own cause.
    Fixture g;
    g.analysis.idle = f.analysis.idle;
    g.analysis.idle[1].queues_work = false;
    auto findings = run(g.analysis, select + "metrics: {idle_ms: {idle: {causes: [sync], culprits: site, refill: true}}}\n" +
                                        "saving: {ms_per_step: idle_ms, method: idle}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].saving_ms_per_step == doctest::Approx(0.010));
    // ... and so is a stretch in which the host never launches again (a harness's sync, then nothing).
    g.analysis.idle[1].queues_work = true;
    g.analysis.idle[1].launching = false;
    findings = run(g.analysis, select + "metrics: {idle_ms: {idle: {causes: [sync], culprits: site, refill: true}}}\n" +
                                   "saving: {ms_per_step: idle_ms, method: idle}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].saving_ms_per_step == doctest::Approx(0.010));
  }
  CHECK(idle_of("{causes: any}") == doctest::Approx(0.075));
  CHECK(idle_of("{causes: [cpu-work]}") == doctest::Approx(0.065));
  CHECK(idle_of("{causes: any, max_stretch: 60us}") == doctest::Approx(0.025));  // the 50 µs stretch only
  CHECK(idle_of("{causes: any, min_stretch: 60us}") == doctest::Approx(0.050));
  CHECK(idle_of("{causes: any, stat: max_gap}") == doctest::Approx(0.100));
  CHECK(idle_of("{causes: any, stat: gap_every_step}") == doctest::Approx(0.030));

  // Two rules: the first claims the sync stretch, the second (order: last) sees only what is left.
  auto first = rules_from(select + "metrics: {idle_ms: {idle: {causes: [sync], culprits: site, refill: true}}}\n"
                                   "message: m\nsaving: {ms_per_step: idle_ms, method: idle}\n");
  auto loaded = ptadvise::load_rule_text(
      "id: PTA902\nname: rest\nseverity: info\ntags: [probe]\nsummary: s\nfix: f\norder: last\n"
      "docs: {what: w, why: y, example: e, fix: f}\nselect: {k: {kind: kernel}}\n"
      "metrics: {rest: {idle: {causes: any}}, all: {idle: {causes: any, include_claimed: true}}}\n"
      "message: \"{rest} of {all}: {idle_causes}\"\nsaving: {ms_per_step: rest, method: idle}\n",
      "rest.yaml");
  REQUIRE(std::holds_alternative<ptadvise::RuleSet>(loaded));
  auto findings_first = ptadvise::evaluate(first, f.analysis);
  REQUIRE(findings_first.size() == 1);
  CHECK(findings_first[0].idle_gaps == std::vector<uint32_t>{0, 1});
  CHECK(findings_first[0].site.op == "aten::item");
  // The same claims across rules inside one evaluate(): load both files into one set.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "ptadvise-claims-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "a.yaml") << kHeader << select
                                << "metrics: {idle_ms: {idle: {causes: [sync], culprits: site, refill: true}}}\n"
                                   "message: m\nsaving: {ms_per_step: idle_ms, method: idle}\n";
  std::ofstream(dir / "b.yaml")
      << "id: PTA902\nname: rest\nseverity: info\ntags: [probe]\nsummary: s\nfix: f\norder: last\n"
         "docs: {what: w, why: y, example: e, fix: f}\nselect: {k: {kind: kernel}}\n"
         "metrics: {rest: {idle: {causes: any}}, all: {idle: {causes: any, include_claimed: true}}}\n"
         "message: \"{rest} of {all}: {idle_causes}\"\nsaving: {ms_per_step: rest, method: idle}\n";
  auto both = ptadvise::load_rules({dir.string()});
  REQUIRE(std::holds_alternative<ptadvise::RuleSet>(both));
  auto findings = ptadvise::evaluate(std::get<ptadvise::RuleSet>(both), f.analysis);
  REQUIRE(findings.size() == 2);
  CHECK(findings[0].rule_id == "PTA901");
  CHECK(findings[0].saving_ms_per_step == doctest::Approx(0.025));
  CHECK(findings[1].rule_id == "PTA902");
  CHECK(findings[1].saving_ms_per_step == doctest::Approx(0.050));
  CHECK(findings[1].idle_gaps == std::vector<uint32_t>{2});
  CHECK(findings[1].message == "0.05 of 0.075: cpu-work 0.05 ms/step");
  fs::remove_all(dir);
}

TEST_CASE("a selection by name keeps event order when it visits the events name by name") {
  // "x_b" is interned first (a runtime call), but the first selected op is "x_a": the selection visits the
  // few events of its names (not the 80 fillers) and must give them back in event order, so the group's
  // representative is the first "x_a". Without the fillers it scans the ops and gets the same answer.
  for (int fillers : {40, 0}) {
    CAPTURE(fillers);
    ptadvise::testing::TraceBuilder trace(ptadvise::testing::Era::Kineto2023);
    trace.device(0, "NVIDIA A100-SXM4-40GB", 8, 0, 40LL << 30);
    trace.runtime("x_b", 1, 1, trace.next_correlation());
    for (int step = 0; step < 2; ++step) {
      const double base = step * 1000.0;
      trace.annotation("ProfilerStep#" + std::to_string(step + 1), base, 1000);
      trace.cpu_op("x_a", base + 100, 20);
      trace.cpu_op("x_b", base + 200, 30);
      for (int k = 0; k < fillers; ++k) trace.cpu_op("filler", base + 300 + 10 * k, 5);
      trace.launch("elementwise_kernel", base + 800, 10, base + 830, 5);
    }
    const Timeline timeline = trace.load();
    const Analysis analysis = ptadvise::analyze(timeline);
    auto findings = run(analysis, "select: {k: {kind: cpu_op, name: \"x_*\"}}\ngroup: {by: [source]}\n");
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].site.detail == "x_a");
    CHECK(findings[0].count_per_step == 2);
    CHECK(findings[0].time_ms_per_step == doctest::Approx(0.050));  // (20 + 30) µs per step
  }
}
