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
`--digest-out`, then `merge` on the digests and on a copy of them with numbers at their limits. Any exit other than 0, 1 (findings) or 2 (input error) fails —
a signal, 4 (internal error), 86 (a sanitizer report in a sanitizer build: the ctest entry
`hostile_traces` runs against build-asan's ptadvise under SANITIZE=1) — and so does a command running past
--timeout seconds. The failing inputs are kept in --keep (default: a temporary directory, printed).
"""
import argparse
import collections
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree

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

    def __init__(self, seed, calm=False):
        self.r = random.Random(seed)
        self.calm = calm  # no values at or past a limit: the trace gets past the partial-trace gate

    def pick(self, *choices):
        return self.r.choice(choices)

    def extreme(self):
        return self.r.choice(self.EXTREMES)

    def number(self, low, high, hostile=0.05):
        if self.r.random() < hostile and not self.calm:
            return self.extreme()
        value = self.r.uniform(low, high)
        return round(value, 3) if self.r.random() < 0.5 else int(value)


def make_trace(seed, rank=None, world=None, calm=None):
    """One trace as a JSON-ready dict. A calm trace (a third of them, from a random source of their own)
    has odd structure but no value at a limit, so that most of it passes the partial-trace gate and reaches
    the rules, the what-if and the job analysis."""
    if calm is None:
        calm = random.Random(seed * 7919 + 19).random() < 0.33
    v = Values(seed, calm)
    r = v.r
    pids = [v.pick(0, 1, 12345, "host", -5, 2**40) for _ in range(r.randint(1, 3))]
    tids = [v.pick(0, 1, 7, 12345, "main", -3, 2**33) for _ in range(r.randint(1, 4))]
    devices = [v.pick(0, 1, 7, -1, 255, 2**31 - 1) for _ in range(r.randint(1, 3))]
    if r.random() < 0.05:  # a trace of hundreds of GPUs (or a writer that put each kernel's id in `pid`)
        devices = list(range(r.randint(50, 400)))
    streams = [v.pick(7, 13, 0, 20, -1, 2**40) for _ in range(r.randint(1, 4))]
    span = v.pick(1e3, 1e5, 1e6, 1e7, 1e9)
    base = v.pick(0, 1e6, 1.7e15, 1.7e15, 9.2e12) if r.random() < 0.97 or calm else v.pick(1e16, 9.2e15)
    # Now and then a run of decades: every time and duration a valid one (under 2^61 ns), their sums not.
    long_events = r.random() < 0.15 and not calm
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
        if r.random() < 0.01 and not calm:
            event.pop("dur", None)
        if r.random() < 0.01 and not calm:
            event["ts"] = v.pick(None, "12", [], {}, True)
        events.append(event)
    if not calm:
        add_quirks(seed, events, pids, tids, devices, streams, base, span)
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


# Markup a name may carry into the HTML report, the JUnit XML or a terminal; none may come out raw.
INJECTIONS = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "]]><x/>", "\u2028\u2029",
              "%s%n%x", "\ud800", "\udfff\ud800", "\ufeff", "\u202e"]


def add_quirks(seed, events, pids, tids, devices, streams, base, span):
    """Writers' and attackers' quirks beyond odd values, from a random source of their own (a trace without
    quirks is the same as before they were added): begin/end pairs, counters, args that are not objects,
    thousands of nested ops or of threads, Python-tree cycles, markup and lone surrogates in names, duplicate
    keys, one CUDA-graph launch for many kernels."""
    r = random.Random(seed * 7919 + 17)
    v = Values(seed * 7919 + 18)
    if r.random() < 0.6:
        return
    for _ in range(r.randint(1, 4)):
        quirk = r.randrange(10)
        pid, tid = r.choice(pids), r.choice(tids)
        if quirk == 0:  # begin/end pairs, some unbalanced, some nested at one time
            for k in range(r.randint(1, 300)):
                ts = base + r.uniform(0, 1) * span
                events.append({"ph": "B", "name": r.choice(OPS), "cat": "cpu_op", "pid": pid, "tid": tid, "ts": ts})
                if r.random() < 0.8:
                    events.append({"ph": "E", "pid": pid, "tid": tid, "ts": ts + v.number(0, span / 100, 0.05)})
        elif quirk == 1:  # counters
            for k in range(r.randint(1, 200)):
                events.append({"ph": "C", "name": v.pick("GPU Memory", "queue", ""), "pid": pid, "tid": tid,
                               "ts": base + r.uniform(0, 1) * span, "args": {"value": v.number(0, 1e9, 0.2)}})
        elif quirk == 2:  # args that are not objects
            for event in r.sample(events, min(len(events), r.randint(1, 50))):
                event["args"] = v.pick("x", [1, 2], 5, None, [], {"": {"": [[[]]]}}, True)
        elif quirk == 3:  # deep nesting: ops inside each other on one thread, from one start
            depth = r.randint(1000, 30000)
            ts = base + r.uniform(0, 1) * span
            for k in range(depth):
                events.append({"ph": "X", "cat": "cpu_op", "name": r.choice(OPS), "pid": pid, "tid": tid,
                               "ts": ts + v.pick(0, k, 0.001 * k), "dur": v.pick(depth - k, span / 10, 1e-3 * (depth - k))})
        elif quirk == 4:  # thousands of threads, each with an op and a launch
            for k in range(r.randint(1000, 12000)):
                ts = base + r.uniform(0, 1) * span
                events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": 100000 + k,
                               "ts": ts, "dur": 10})
                events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid,
                               "tid": 100000 + k, "ts": ts + 1, "dur": 5, "args": {"correlation": 500000 + k}})
                events.append({"ph": "X", "cat": "kernel", "name": r.choice(KERNELS), "pid": r.choice(devices),
                               "tid": r.choice(streams), "ts": ts + 6, "dur": 3,
                               "args": {"correlation": 500000 + k, "device": r.choice(devices), "stream": r.choice(streams)}})
        elif quirk == 5:  # a Python call tree with cycles, self-parents and ids past every limit
            ids = [v.number(0, 30, 0.2) for _ in range(r.randint(2, 40))]
            for k in range(r.randint(10, 2000)):
                ts = base + r.uniform(0, 1) * span
                events.append({"ph": "X", "cat": "python_function", "name": v.pick("train.py(10): step", "<built-in method item>",
                                                                                   "torch/nn/modules/module.py(1501): _call_impl"),
                               "pid": pid, "tid": tid, "ts": ts, "dur": v.number(0, span / 10, 0.05),
                               "args": {"Python id": r.choice(ids), "Python parent id": r.choice(ids),
                                        "Python thread": v.pick(0, 1, -1)}})
        elif quirk == 6:  # markup, format strings and lone surrogates in names and thread names
            for event in r.sample(events, min(len(events), r.randint(1, 40))):
                if "name" in event:
                    event["name"] = event["name"] + r.choice(INJECTIONS)
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": r.choice(INJECTIONS)}})
        elif quirk == 7:  # duplicate keys: the writer's second value wins, or not; written as raw JSON
            for event in r.sample(events, min(len(events), r.randint(1, 30))):
                event["__duplicate__"] = v.pick("ts", "dur", "ph", "name", "args")
        elif quirk == 8:  # one CUDA-graph launch for many kernels
            ts = base + r.uniform(0, 1) * span
            correlation = v.pick(7, 0, 2**62)
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": pid, "tid": tid,
                           "ts": ts, "dur": 20, "args": {"correlation": correlation}})
            for k in range(r.randint(10, 20000)):
                events.append({"ph": "X", "cat": "kernel", "name": r.choice(KERNELS), "pid": r.choice(devices),
                               "tid": r.choice(streams), "ts": ts + 30 + k * v.pick(1, 0, 3), "dur": v.pick(1, 0, 2),
                               "args": {"correlation": correlation, "device": r.choice(devices),
                                        "stream": r.choice(streams), "graph id": 1}})
        else:  # numbers in the forms writers use: exponents, many digits, negative zero, strings
            for event in r.sample(events, min(len(events), r.randint(1, 60))):
                if isinstance(event.get("ts"), (int, float)):
                    event["__number__"] = v.pick("exponent", "digits", "negzero", "string")


def mutate_numbers(value, v, rate=0.05):
    """`value` (parsed JSON) with about `rate` of its numbers replaced by extreme ones."""
    if isinstance(value, dict):
        return {key: mutate_numbers(item, v, rate) for key, item in value.items()}
    if isinstance(value, list):
        return [mutate_numbers(item, v, rate) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and v.r.random() < rate:
        extreme = v.extreme()
        if isinstance(value, int):  # an integer field stays one, so the digest reader takes it
            extreme = v.r.choice([e for e in Values.EXTREMES if isinstance(e, int)])
        return extreme
    return value


def dumps_event(event):
    """An event's JSON text, with the raw forms add_quirks() asked for (duplicate keys, number spellings)."""
    event = dict(event)
    duplicate = event.pop("__duplicate__", None)
    number = event.pop("__number__", None)
    text = json.dumps(event, allow_nan=False)
    if number and isinstance(event.get("ts"), (int, float)):
        ts = event["ts"]
        spelled = {"exponent": "%.17e" % ts, "digits": "%.20f" % ts, "negzero": "-0.0", "string": '"%s"' % ts}[number]
        text = text.replace('"ts": %s' % json.dumps(ts), '"ts": ' + spelled, 1)
    if duplicate:
        extra = {"ts": "1", "dur": "-5", "ph": '"E"', "name": '"x"', "args": '{"correlation": 3}'}[duplicate]
        text = text[:-1] + ', "%s": %s}' % (duplicate, extra)
    return text


def write(trace, path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        head = {key: value for key, value in trace.items() if key != "traceEvents"}
        out.write(json.dumps(head, allow_nan=False)[:-1] + (", " if head else "") + '"traceEvents": [\n')
        out.write(",\n".join(dumps_event(event) for event in trace["traceEvents"]))
        out.write("\n]}\n")


def output_problem(args, stdout, work):
    """What is wrong with a command's output, or None: JSON and SARIF must parse, JUnit must be well-formed
    XML, and the HTML report must not carry a name's markup raw."""
    formats = {args[i + 1] for i in range(len(args) - 1) if args[i] == "--format"}
    try:
        if formats & {"json", "sarif"}:
            json.loads(stdout)
        if "junit" in formats:
            xml.etree.ElementTree.fromstring(stdout)
    except ValueError as error:
        return "not %s: %s" % (" ".join(sorted(formats)), str(error)[:200])
    except xml.etree.ElementTree.ParseError as error:
        return "not well-formed XML: %s" % error
    if args[0] == "report":
        with open(os.path.join(work, "report.html"), encoding="utf-8", errors="replace") as page:
            html = page.read()
        for marker in ("<script>alert(1)", "<img src=x onerror", "<x/>"):
            if marker in html:
                return "the HTML report holds a trace name's markup raw: %s" % marker
    return None


EXITS = collections.Counter()  # exit code -> commands
ANALYSED = collections.Counter()  # command -> runs that analysed their input (exit 0 or 1)


def run(binary, args, timeout, work=None):
    """None when the exit is 0, 1 or 2 and the output is well-formed (output_problem); else what went wrong,
    in one line."""
    try:
        done = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "no exit after %d s" % timeout
    EXITS[done.returncode] += 1
    if done.returncode in (0, 1):
        ANALYSED[args[0]] += 1
    if done.returncode in (0, 1) and work is not None:
        return output_problem(args, done.stdout, work)
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
    parser.add_argument("--digests", type=seed_range, default=range(0, 0),
                        help="seeds A:B of testdata/job's digests with numbers at their limits")
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
            problem = run(options.binary, args, options.timeout, work)
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
            write(make_trace(1000003 * (seed + 1) + rank, rank, world, calm=seed % 2 == 0),
                  os.path.join(job, "rank%d.json" % rank))
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
            # The same digests as another version or a hostile writer could leave them: valid JSON, every
            # number now and then at a limit (times, delays, join terms, sizes, counts, ranks).
            hostile = []
            for k, path in enumerate(digests):
                with open(path, encoding="utf-8") as text:
                    digest = json.load(text)
                mutated = os.path.join(work, "hostile%d.%d.json" % (seed, k))
                with open(mutated, "w", encoding="utf-8") as out:
                    json.dump(mutate_numbers(digest, Values(seed * 31 + k)), out)
                hostile.append(mutated)
            problem = run(options.binary, ["merge", "--exit-zero", "--format", "json"] + hostile, options.timeout, work)
            if problem:
                report("job seed %d, ptadvise merge (hostile digests)" % seed, problem, hostile)
            for path in hostile:
                os.remove(path)
        shutil.rmtree(job)
    # The digests of the project's own two-rank jobs (testdata/job), numbers at their limits.
    jobs_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "job")
    sources = []
    if len(options.digests) > 0:
        for name in sorted(os.listdir(jobs_dir)):
            prefix = os.path.join(work, "source-" + name)
            problem = run(options.binary, ["check", "--exit-zero", "--digest-out", prefix + ".json",
                                           os.path.join(jobs_dir, name)], options.timeout)
            digests = sorted(os.path.join(work, n) for n in os.listdir(work) if n.startswith("source-%s." % name))
            if problem or not digests:
                report("digests of testdata/job/%s" % name, problem or "no digest written", [])
                continue
            sources.append([json.load(open(path, encoding="utf-8")) for path in digests])
    for seed in options.digests:
        if not sources:
            break
        v = Values(seed)
        rate = v.pick(0.001, 0.003, 0.01)
        mutated = []
        for k, digest in enumerate(sources[seed % len(sources)]):
            path = os.path.join(work, "mutated%d.rank%d.json" % (seed, k))
            with open(path, "w", encoding="utf-8") as out:
                json.dump(mutate_numbers(digest, v, rate), out)
            mutated.append(path)
        problem = run(options.binary, ["merge", "--exit-zero", "--format", "json"] + mutated, options.timeout, work)
        if not problem:
            problem = run(options.binary, ["merge", "--exit-zero", "--format", "sarif"] + mutated, options.timeout, work)
        if problem:
            report("digest seed %d, ptadvise merge" % seed, problem, mutated)
        for path in mutated:
            os.remove(path)
    tally = ", ".join("%d exited %d" % (EXITS[code], code) for code in sorted(EXITS))
    print("commands: " + tally)
    if (len(options.traces) > 1 or len(options.jobs) > 0 or len(options.digests) > 0) and not ANALYSED["check"]:
        # Every check refused its input: a binary without its rules, or a generator gone wrong.
        print("FAIL: no check analysed its input (every one exited 2 or failed)")
        failures += 1
    counts = "%d traces, %d jobs and %d digest pairs" % (len(options.traces), len(options.jobs), len(options.digests))
    print("%s: %d commands failed" % (counts, failures) if failures else counts + ": every command exited 0, 1 or 2")
    if options.keep or not failures:  # the failing inputs were copied to --keep, or there are none
        shutil.rmtree(work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
