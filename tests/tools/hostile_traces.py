#!/usr/bin/env python3
"""Structure-aware hostile traces: valid Kineto JSON whose values are not, through every command.

libFuzzer's byte mutations rarely get past the JSON parser into the analysis, the what-if, the job digests
and the printers. This generator writes traces that parse — steps, CPU ops, launches, kernels, copies,
syncs, flows, memory events, metadata, device properties, several ranks — with the values a broken or
hostile recorder writes: numbers at and past the int64 limits, 1e300, negative and zero durations, ids
shared by many events, overlapping and unnested ops, steps out of order, control characters in names.
Each seed gives the same trace on every machine (Python's `random` with that seed); every fifth is
written gzip-compressed.

    python3 tests/tools/hostile_traces.py PTADVISE [--traces A:B] [--jobs A:B] [--keep DIR]

runs every trace of seeds A..B-1 through `check` (json; sarif with --annotate; github writing a baseline,
junit reading it; markdown --verbose), `summary`, `whatif`, `report` and `diff` against the previous seed's
trace, and every job of seeds A..B-1 (2 to 4 ranks in one directory) through `check DIR` with
`--digest-out`, then `merge` on the digests. Any exit other than 0, 1 (findings) or 2 (input error) fails —
a signal, 4 (internal error), 86 (a sanitizer report in a sanitizer build: the ctest entry
`hostile_traces` runs against build-asan's ptadvise under SANITIZE=1) — and so does a command running past
--timeout seconds. The failing inputs are kept in --keep (default: a temporary directory, printed).
"""
import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

KERNELS = ["volta_sgemm_128x64_nn", "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
           "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
           "ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
           "ncclDevKernel_AllGather_RING_LL", "void cudnn::bn_fw_tr_1C11_kernel_NCHW", "triton_poi_fused_add_0",
           "sm90_xmma_gemm_bf16bf16_bf16f32", "", "\u00e9\u4e2d\u0000\u001b[31m::error::x\n##[error]y"]
OPS = ["aten::mm", "aten::addmm", "aten::linear", "aten::to", "aten::copy_", "aten::item",
       "aten::_local_scalar_dense", "aten::nonzero", "Optimizer.step#SGD.step", "aten::empty", "aten::conv2d",
       "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
       "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "autograd::engine::evaluate_function: MmBackward0",
       "nccl:all_reduce", "record_param_comms", "aten::zero_", "Optimizer.zero_grad#SGD.zero_grad",
       "DistributedDataParallel.forward", "cudaGraphLaunch", "## forward ##"]
RUNTIME = ["cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaDeviceSynchronize",
           "cudaEventSynchronize", "cudaStreamWaitEvent", "cudaEventRecord", "cudaMalloc", "cudaFree",
           "cudaLaunchKernelExC", "cuLaunchKernel", "cudaGraphLaunch", "hipLaunchKernel", "cudaMemsetAsync"]
GPU_OTHER = ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memcpy DtoD (Device -> Device)",
             "Memset (Device)", "Event Sync", "Stream Sync", "Context Sync", "nccl:all_reduce", "x"]


class Values:
    """Random values, mostly plausible, now and then at or past a limit."""

    EXTREMES = [0, 1, -1, 2**31 - 1, 2**31, 2**32, 2**53, 2**62, 2**63 - 1, -2**63, 1e15, 1e18, 1e300, -1e300,
                0.5, 1e-9, 123456789.123, 3000000000000000000, 1099511627775]

    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, *choices):
        return self.r.choice(choices)

    def extreme(self):
        return self.r.choice(self.EXTREMES)

    def number(self, low, high, hostile=0.05):
        if self.r.random() < hostile:
            return self.extreme()
        value = self.r.uniform(low, high)
        return round(value, 3) if self.r.random() < 0.5 else int(value)


def make_trace(seed, rank=None, world=None):
    """One trace as a JSON-ready dict."""
    v = Values(seed)
    r = v.r
    pids = [v.pick(0, 1, 12345, "host", -5, 2**40) for _ in range(r.randint(1, 3))]
    tids = [v.pick(0, 1, 7, 12345, "main", -3, 2**33) for _ in range(r.randint(1, 4))]
    devices = [v.pick(0, 1, 7, -1, 255, 2**31 - 1) for _ in range(r.randint(1, 3))]
    if r.random() < 0.05:  # a trace of hundreds of GPUs (or a writer that put each kernel's id in `pid`)
        devices = list(range(r.randint(50, 400)))
    streams = [v.pick(7, 13, 0, 20, -1, 2**40) for _ in range(r.randint(1, 4))]
    span = v.pick(1e3, 1e5, 1e6, 1e7, 1e9)
    base = v.pick(0, 1e6, 1.7e15, 1.7e15, 9.2e12) if r.random() < 0.97 else v.pick(1e16, 9.2e15)
    # Now and then a run of decades: every time and duration a valid one (under 2^61 ns), their sums not.
    long_events = r.random() < 0.15
    if long_events:
        span, base = 1e15, v.pick(0, 1e3)
    events = []
    steps = r.randint(0, 12)
    step_len = span / max(1, steps)
    for s in range(steps):
        start = base + s * step_len + (r.uniform(-step_len, step_len) * 0.3 if r.random() < 0.2 else 0)
        events.append({"ph": "X", "cat": v.pick("user_annotation", "cpu_op", "", "gpu_user_annotation"),
                       "name": "ProfilerStep#%s" % v.pick(s, s + 1, 0, -1, "x", 2**40),
                       "pid": r.choice(pids), "tid": r.choice(tids), "ts": start,
                       "dur": step_len * v.pick(1, 0.9, 0, 1.5, -1, 2),
                       "args": {"External id": v.number(0, 1e6)}})
    for _ in range(r.randint(1, v.pick(50, 500, 3000))):
        start = base + r.uniform(-0.05, 1.05) * span
        dur = v.number(0, span / v.pick(10, 100, 1000, 1e5), 0.03)
        if long_events and r.random() < 0.3:
            dur = r.uniform(0.1, 1.0) * span
        pid, tid = r.choice(pids), r.choice(tids)
        kind = r.random()
        if kind < 0.35:
            event = {"ph": "X", "cat": v.pick("cpu_op", "python_function", "user_annotation", "Operator"),
                     "name": r.choice(OPS), "pid": pid, "tid": tid, "ts": start, "dur": dur,
                     "args": {"External id": v.number(0, 100), "Sequence number": v.number(0, 100),
                              "Fwd thread id": 0, "Input Dims": v.pick([[2, 3]], [], [[2**40, 2**40]], "x", None,
                                                                       [[1099511627775, 9000000]]),
                              "Input type": v.pick(["float"], ["c10::Half", "float"], [], 5),
                              "Python id": v.number(0, 50), "Python parent id": v.number(0, 50),
                              "Call stack": v.pick("a.py(1): f\nb.py(2): g", "", 5, "x.py(0): <module>"),
                              "Collective name": v.pick("allreduce", "allgather", "broadcast", None),
                              "In msg nelems": v.number(0, 1e9), "Out msg nelems": v.number(0, 1e9),
                              "Group size": v.number(1, 64), "dtype": v.pick("Float", "BFloat16", "x"),
                              "Process Group Name": v.pick("0", "default_pg", ""), "Seq": v.number(0, 100)}}
        elif kind < 0.6:
            event = {"ph": "X", "cat": v.pick("cuda_runtime", "cuda_driver", "Runtime"), "name": r.choice(RUNTIME),
                     "pid": pid, "tid": tid, "ts": start, "dur": dur,
                     "args": {"correlation": r.randint(0, 200) if r.random() < 0.8 else v.extreme(),
                              "External id": v.number(0, 100), "cbid": 211, "stream": r.choice(streams),
                              "device": r.choice(devices), "wait_on_stream": v.pick(r.choice(streams), None),
                              "wait_on_cuda_event_record_corr_id": v.number(0, 200),
                              "cuda_sync_kind": v.pick("Stream Synchronize", "Event Synchronize",
                                                       "Device Synchronize", 5)}}
        elif kind < 0.85:
            category = v.pick("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "cuda_sync",
                              "gpu_user_annotation")
            name = r.choice(KERNELS) if category in ("kernel", "Kernel") else r.choice(GPU_OTHER)
            if r.random() < 0.02:
                name = "k" * r.randint(1, 3000)
            event = {"ph": "X", "cat": category, "name": name, "pid": r.choice(devices),
                     "tid": "stream %s" % r.choice(streams), "ts": start, "dur": dur,
                     "args": {"device": r.choice(devices), "stream": r.choice(streams),
                              "correlation": r.randint(0, 200), "External id": v.number(0, 100),
                              "bytes": v.number(0, 1e9), "memory bandwidth (GB/s)": v.number(0, 1000),
                              "grid": [v.number(1, 100), 1, 1], "block": [128, 1, 1], "registers per thread": 32,
                              "warps per SM": v.number(0, 10), "est. achieved occupancy %": v.number(0, 100),
                              "Collective name": v.pick("allreduce", "allgather", "broadcast", None),
                              "In msg nelems": v.number(0, 1e9), "Out msg nelems": v.number(0, 1e9),
                              "Group size": v.number(1, 64), "dtype": v.pick("Float", "BFloat16"),
                              "Process Group Name": v.pick("0", "default_pg", ""), "Seq": v.number(0, 100)}}
        elif kind < 0.93:
            event = {"ph": v.pick("s", "f", "t"), "id": r.randint(0, 200) if r.random() < 0.9 else v.extreme(),
                     "pid": r.choice(pids + devices), "tid": r.choice(tids), "ts": start,
                     "cat": v.pick("ac2g", "async", "fwdbwd"), "name": v.pick("ac2g", "fwdbwd", ""), "bp": "e"}
        elif kind < 0.98:
            event = {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid, "tid": tid,
                     "ts": start, "args": {"Total Reserved": v.number(0, 1e10), "Total Allocated": v.number(0, 1e10),
                                           "Bytes": v.number(-1e9, 1e9), "Addr": v.number(0, 1e12),
                                           "Device Id": r.choice(devices), "Device Type": v.pick(0, 1, 9)}}
        else:
            event = {"ph": "M", "name": v.pick("process_name", "thread_name", "process_labels", "thread_sort_index"),
                     "pid": r.choice(pids + devices), "tid": r.choice(tids),
                     "args": {"name": v.pick("python3", "stream 7", "GPU 0", "", "\u001b]0;x\u0007",
                                             "thread 1 (python)"), "labels": "CPU", "sort_index": v.number(0, 10)}}
        if r.random() < 0.01:
            event.pop("dur", None)
        if r.random() < 0.01:
            event["ts"] = v.pick(None, "12", [], {}, True)
        events.append(event)
    if r.random() < 0.5:
        r.shuffle(events)
    else:
        events.sort(key=lambda e: e["ts"] if isinstance(e.get("ts"), (int, float)) else 0)
    trace = {"schemaVersion": 1, "traceEvents": events,
             "deviceProperties": [{"id": d, "name": v.pick("NVIDIA A100-SXM4-80GB", "NVIDIA H100", "AMD Instinct MI300X", ""),
                                   "totalGlobalMem": v.number(1e9, 8e10), "computeMajor": v.pick(7, 8, 9, -1, 100),
                                   "computeMinor": v.pick(0, 6, 9), "numSms": v.pick(108, 0, -1, 132)}
                                  for d in devices if r.random() < 0.8]}
    if r.random() < 0.5:
        trace["baseTimeNanoseconds"] = v.pick(0, 1700000000000000000, 2**63 - 1, -2**63, 1e19)
    if rank is not None:
        trace["distributedInfo"] = {"backend": v.pick("nccl", "gloo", ""), "pg_count": 1,
                                    "rank": rank if r.random() < 0.95 else v.extreme(),
                                    "world_size": world if r.random() < 0.95 else v.extreme()}
    elif r.random() < 0.3:
        trace["distributedInfo"] = {"backend": "nccl", "rank": v.pick(0, 1, -1, 2**40), "world_size": v.pick(1, 2, 0, 2**40)}
    return trace


def write(trace, path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        json.dump(trace, out, allow_nan=False)


def run(binary, args, timeout):
    """None when the exit is 0, 1 or 2; else what went wrong, in one line."""
    try:
        done = subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "no exit after %d s" % timeout
    if done.returncode in (0, 1, 2):
        return None
    stderr = done.stderr.decode("utf-8", "replace").splitlines()
    report = next((line for line in stderr if "runtime error" in line or "ERROR:" in line or "SUMMARY" in line),
                  stderr[-1] if stderr else "")
    return "exit %d: %s" % (done.returncode, report.strip()[:300])


def seed_range(text):
    first, _, last = text.partition(":")
    return range(int(first), int(last))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--traces", type=seed_range, default=range(0, 20), help="seeds A:B of single traces")
    parser.add_argument("--jobs", type=seed_range, default=range(0, 6), help="seeds A:B of multi-rank jobs")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per command")
    parser.add_argument("--keep", help="directory for the failing inputs")
    options = parser.parse_args()
    work = tempfile.mkdtemp(prefix="hostile_traces.")
    keep = options.keep or os.path.join(work, "failing")
    failures = 0

    def report(what, problem, inputs):
        nonlocal failures
        failures += 1
        os.makedirs(keep, exist_ok=True)
        for path in inputs:
            shutil.copy(path, keep)
        print("FAIL %s: %s (kept in %s)" % (what, problem, keep), flush=True)

    previous = None
    for seed in options.traces:
        trace = os.path.join(work, "trace%d.json%s" % (seed, ".gz" if seed % 5 == 4 else ""))
        write(make_trace(seed), trace)
        annotated = os.path.join(work, "annotated.json")
        baseline = os.path.join(work, "baseline.yaml")
        commands = [["check", "--exit-zero", "--format", "json", trace],
                    ["check", "--exit-zero", "--format", "sarif", "--annotate", annotated, trace],
                    ["check", "--exit-zero", "--format", "github", "--write-baseline", baseline, trace],
                    ["check", "--exit-zero", "--format", "junit", "--baseline", baseline, trace],
                    ["check", "--exit-zero", "--format", "markdown", "--verbose", trace],
                    ["summary", "--format", "json", trace],
                    ["whatif", "--format", "json", trace],
                    ["report", "-o", os.path.join(work, "report.html"), trace]]
        if previous:
            commands.append(["diff", "--format", "json", previous, trace])
        for args in commands:
            problem = run(options.binary, args, options.timeout)
            if problem:
                inputs = [previous, trace] if args[0] == "diff" else [trace]
                report("trace seed %d, ptadvise %s" % (seed, " ".join(args[:-1])), problem, inputs)
        for scratch in (annotated, baseline):
            if os.path.exists(scratch):
                os.remove(scratch)
        if previous:
            os.remove(previous)
        previous = trace
    for seed in options.jobs:
        job = os.path.join(work, "job%d" % seed)
        os.makedirs(job)
        world = 2 + seed % 3
        for rank in range(world):
            write(make_trace(1000003 * (seed + 1) + rank, rank, world), os.path.join(job, "rank%d.json" % rank))
        digest = os.path.join(work, "digest%d.json" % seed)
        ranks = [os.path.join(job, name) for name in sorted(os.listdir(job))]
        for args in (["check", "--exit-zero", "--format", "json", job],
                     ["check", "--exit-zero", "--digest-out", digest, job]):
            problem = run(options.binary, args, options.timeout)
            if problem:
                report("job seed %d, ptadvise %s" % (seed, " ".join(args[:-1])), problem, ranks)
        digests = sorted(os.path.join(work, name) for name in os.listdir(work)
                         if name.startswith("digest%d." % seed))
        if digests:
            problem = run(options.binary, ["merge", "--exit-zero", "--format", "json"] + digests, options.timeout)
            if problem:
                report("job seed %d, ptadvise merge" % seed, problem, digests)
        shutil.rmtree(job)
    counts = "%d traces and %d jobs" % (len(options.traces), len(options.jobs))
    print("%s: %d commands failed" % (counts, failures) if failures else counts + ": every command exited 0, 1 or 2")
    if options.keep or not failures:  # the failing inputs were copied to --keep, or there are none
        shutil.rmtree(work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
