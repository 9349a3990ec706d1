// A fixed set of hand-made findings shared by the advisor tests (printers, ranking, baselines).
#pragma once

#include <string>
#include <vector>

#include "ptadvise/advisor.h"

namespace ptadvise::testing {

inline Evidence sample_evidence(int64_t step, int64_t ts_us, int64_t dur_ns, std::string event, std::string track) {
  Evidence e;
  e.step = static_cast<uint32_t>(step);
  e.step_number = step;
  e.file_ts_ns = ts_us * 1000;
  e.ts_ns = ts_us * 1000;
  e.dur_ns = dur_ns;
  e.event = std::move(event);
  e.track = std::move(track);
  return e;
}

// Five findings with known savings: two overlap at one site (PTA001/PTA007), two share a function.
inline std::vector<Finding> sample_findings() {
  std::vector<Finding> out;

  Finding sync;
  sync.rule_id = "PTA101";
  sync.rule_name = "item-sync-in-step";
  sync.severity = Severity::Warning;
  sync.tags = {"sync"};
  sync.site.op = "aten::_local_scalar_dense";
  sync.site.op_chain = {"ProfilerStep#3", "aten::item", "aten::_local_scalar_dense"};
  sync.site.source = SourceLocation{"train.py", 42, "train_step"};
  sync.message = ".item() blocks the host until the GPU catches up, every step";
  sync.short_message = ".item() syncs once per step; GPU idle 2.5 ms/step";
  sync.fix = "keep the value on the device; log it every N steps";
  sync.short_fix = "log it every N steps";
  sync.evidence = {sample_evidence(3, 1700000000123, 50000, "aten::_local_scalar_dense", "pid 4242 tid 4242"),
                   sample_evidence(4, 1700000025123, 52000, "aten::_local_scalar_dense", "pid 4242 tid 4242")};
  sync.count_per_step = 1;
  sync.time_ms_per_step = 2.5;
  sync.steps_present_pct = 100;
  sync.saving_ms_per_step = 2.5;
  sync.saving_pct = 10;
  sync.saving_method = "GPU idle after the sync, from the idle ledger";
  sync.confidence = Confidence::High;
  sync.trace_path = "run/trace.json";
  out.push_back(sync);

  Finding later_sync = sync;  // the same function, another line: same fingerprint base
  later_sync.site.source = SourceLocation{"train.py", 50, "train_step"};
  later_sync.evidence.resize(1);
  later_sync.saving_ms_per_step = 0.5;
  later_sync.saving_pct = 2;
  later_sync.time_ms_per_step = 0.5;
  out.push_back(later_sync);

  Finding copy;
  copy.rule_id = "PTA001";
  copy.rule_name = "h2d-copy-every-step";
  copy.severity = Severity::Warning;
  copy.tags = {"memcpy"};
  copy.site.op = "aten::copy_";
  copy.site.kernel = "Memcpy HtoD (Pageable -> Device)";
  copy.site.op_chain = {"ProfilerStep#3", "nn.Module: Net_0", "aten::to", "aten::_to_copy", "aten::copy_"};
  copy.site.detail = "4 KiB per copy";
  copy.message = "a 4 KiB host tensor is copied to the GPU in every step";
  copy.fix = "create the tensor once on the device";
  copy.evidence = {sample_evidence(3, 1700000000500, 3000, "Memcpy HtoD (Pageable -> Device)", "GPU 0 stream 7")};
  copy.count_per_step = 2;
  copy.time_ms_per_step = 1.2;
  copy.steps_present_pct = 100;
  copy.saving_ms_per_step = 1.0;
  copy.saving_pct = 4;
  copy.saving_method = "copy time plus the GPU idle it causes";
  copy.confidence = Confidence::Medium;
  copy.trace_path = "run/trace.json";
  out.push_back(copy);

  Finding pageable = copy;  // the same copies seen by another rule: must not be counted twice
  pageable.rule_id = "PTA007";
  pageable.rule_name = "pageable-copy";
  pageable.message = "copies from pageable memory run synchronously";
  pageable.fix = "pin the host memory";
  pageable.saving_ms_per_step = 0.8;
  pageable.saving_pct = 3.2;
  out.push_back(pageable);

  Finding tiny;
  tiny.rule_id = "PTA103";
  tiny.rule_name = "tiny-kernel-storm";
  tiny.severity = Severity::Info;
  tiny.tags = {"launch"};
  tiny.message = "62% of kernels run for less than 10 us";
  tiny.fix = "fuse kernels with torch.compile";
  tiny.count_per_step = 480;
  tiny.time_ms_per_step = 3;
  tiny.steps_present_pct = 100;
  tiny.saving_ms_per_step = 1.0;
  tiny.saving_pct = 4;
  tiny.saving_method = "launch-bound idle from the ledger";
  tiny.confidence = Confidence::Low;
  tiny.trace_path = "run/trace.json";
  out.push_back(tiny);
  return out;
}

inline Report sample_report() {
  Report report;
  report.tool_version = "0.1.0";
  report.fail_on = Severity::Warning;
  report.source_root = ".";
  TraceReport trace;
  trace.path = "run/trace.json";
  trace.device = "NVIDIA A100-SXM4-80GB";
  trace.step_count = 8;
  trace.step_note = "ProfilerStep markers";
  trace.step_ms = 25;
  trace.gpu_busy_pct = 61.5;
  trace.has_gpu = true;
  trace.coverage.ran = 19;
  trace.coverage.no_stacks = 1;
  trace.coverage.not_run = {{"PTA111", "no Python stacks"}};
  trace.findings = sample_findings();
  rank_findings(trace.findings);
  trace.recoverable_ms = recoverable_ms_per_step(trace.findings, trace.step_ms);
  trace.new_finding.assign(trace.findings.size(), true);
  report.traces.push_back(trace);
  return report;
}

}  // namespace ptadvise::testing
