#!/usr/bin/env python3
"""Independent computation of `ptadvise summary` figures, for tests/unit/trace/test_corpus_summary.cpp.

Plain json/gzip, no ptadvise code: a straightforward re-implementation of the definitions in
docs/ANALYSIS.md (steps, GPU extent by launch, busy union, kernels per step, tiny-kernel share).
Prints one line per trace with the numbers the C++ test asserts.

    python3 tests/tools/summary_expectations.py ../shared/traces/FILE.json.gz ...
"""
import collections
import decimal
import gzip
import json
import sys

CPU_CATS = {None, "", "cpu_op", "Operator", "user_annotation"}
HOST_CATS = {None, "", "cpu_op", "Operator", "user_annotation", "python_function", "cuda_runtime", "Runtime",
             "cuda_driver"}
WINDOW_CATS = HOST_CATS | {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_sync",
                           "gpu_user_annotation", "collective_comm"}
LAUNCH_CATS = {"cuda_runtime", "Runtime", "cuda_driver"}
ACTIVITY = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
            "gpu_memset": "memset", "Memset": "memset"}
GPU_SIDE_CATS = set(ACTIVITY) | {"cuda_sync", "gpu_user_annotation"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f, parse_float=decimal.Decimal)  # exact decimal µs, no float rounding
    return data if isinstance(data, list) else data.get("traceEvents", [])


def ns(value):
    return int((decimal.Decimal(str(value)) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def as_int(value):
    try:
        return int(str(value))
    except ValueError:
        return None


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def main_thread_markers(events):
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in CPU_CATS and str(e.get("name", "")).startswith("ProfilerStep#"):
            by_thread[(str(e.get("pid")), str(e.get("tid")))].append(e)
    if not by_thread:
        return []
    best = max(by_thread, key=lambda key: (len(by_thread[key]), key[0] == key[1]))
    markers = sorted(by_thread[best], key=lambda e: (ns(e["ts"]), -ns(e.get("dur", 0))))
    steps = []
    for e in markers:
        start = ns(e["ts"])
        if steps and steps[-1]["start"] == start and steps[-1]["name"] == e["name"]:
            continue
        steps.append({"name": e["name"], "start": start, "end": start + max(0, ns(e.get("dur", 0)))})
    return steps


def infer_steps(events, runtime_by_corr):
    by_device = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and ACTIVITY.get(e.get("cat")) == "kernel":
            by_device[gpu_device(e)].append(e)
    if not by_device:
        return None
    device = max(by_device, key=lambda d: len(by_device[d]))
    seq = sorted(by_device[device], key=lambda e: ns(e["ts"]))
    names = [e["name"] for e in seq]
    k = len(names)
    positions = collections.defaultdict(list)
    for i, name in enumerate(names):
        positions[name].append(i)
    periods = set()
    for name, pos in positions.items():
        gaps = {b - a for a, b in zip(pos, pos[1:])}
        if len(pos) >= 2 and len(gaps) == 1:
            period = gaps.pop()
            if k // period >= 2:
                periods.add(period)
    for period in sorted(periods, reverse=True):
        windows = k // period
        best = None
        for offset in range(0, k - windows * period + 1):
            counters = [collections.Counter(names[offset + w * period: offset + (w + 1) * period])
                        for w in range(windows)]
            if any(c != counters[0] for c in counters[1:]):
                continue
            score = 0
            for w in range(0 if offset else 1, windows):
                i = offset + w * period
                score += ns(seq[i]["ts"]) - (ns(seq[i - 1]["ts"]) + max(0, ns(seq[i - 1].get("dur", 0))))
            if best is None or score > best[0]:
                best = (score, offset)
        if best is None:
            continue
        offset = best[1]
        steps = []
        for w in range(windows):
            chunk = seq[offset + w * period: offset + (w + 1) * period]
            starts, ends = [], []
            for kern in chunk:
                call = runtime_by_corr.get(as_int(kern.get("args", {}).get("correlation", -1)))
                host = call if call is not None else kern
                starts.append(ns(host["ts"]))
                ends.append(ns(host["ts"]) + max(0, ns(host.get("dur", 0))))
            steps.append({"start": min(starts), "end": max(ends)})
        for a, b in zip(steps, steps[1:]):
            a["end"] = max(a["start"], b["start"])
        return steps
    return None


def gpu_device(e):
    pid = as_int(e.get("pid"))
    if pid is not None:
        return pid
    return as_int(e.get("args", {}).get("device", -1))


def summarize(path):
    events = [e for e in load(path) if isinstance(e, dict)]
    runtime_by_corr = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS:
            corr = as_int(e.get("args", {}).get("correlation", -1))
            if corr is not None and corr >= 0 and corr not in runtime_by_corr:
                runtime_by_corr[corr] = e

    steps = main_thread_markers(events)
    source = "ProfilerStep"
    if not steps:
        steps = infer_steps(events, runtime_by_corr)
        source = "inferred"
    if not steps:
        source = "whole-window"
        timed = [e for e in events if e.get("ph") == "X" and e.get("cat") in WINDOW_CATS]
        steps = [{"start": min(ns(e["ts"]) for e in timed),
                  "end": max(ns(e["ts"]) + max(0, ns(e.get("dur", 0))) for e in timed)}]
    steps.sort(key=lambda s: s["start"])
    for s in steps:
        s["gpu_start"] = None
        s["gpu_end"] = None

    def step_at(ts, lo_key, hi_key):
        # The latest-starting step containing ts (one step back is checked too), as in docs/ANALYSIS.md.
        candidates = [i for i, s in enumerate(steps) if lo_key(s) <= ts]
        if not candidates:
            return None
        i = candidates[-1]
        for j in (i, i - 1):
            if 0 <= j and lo_key(steps[j]) <= ts < hi_key(steps[j]):
                return j
        return None

    gpu_ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ACTIVITY]
    kernel_step = []
    unlaunched = []
    for e in gpu_ops:
        call = runtime_by_corr.get(as_int(e.get("args", {}).get("correlation", -1)))
        if call is None:
            unlaunched.append(e)
            continue
        s = step_at(ns(call["ts"]), lambda s: s["start"], lambda s: s["end"])
        if s is None:
            continue
        start, end = ns(e["ts"]), ns(e["ts"]) + max(0, ns(e.get("dur", 0)))
        st = steps[s]
        st["gpu_start"] = start if st["gpu_start"] is None else min(st["gpu_start"], start)
        st["gpu_end"] = end if st["gpu_end"] is None else max(st["gpu_end"], end)
        if ACTIVITY[e["cat"]] == "kernel":
            kernel_step.append(e)

    def span_start(s):
        return s["start"] if s["gpu_start"] is None else min(s["start"], s["gpu_start"])

    def span_end(s):
        return s["end"] if s["gpu_end"] is None else max(s["end"], s["gpu_end"])

    frozen = [(span_start(s), span_end(s)) for s in steps]
    order = sorted(range(len(steps)), key=lambda i: frozen[i][0])
    late = []
    for e in unlaunched:
        ts = ns(e["ts"])
        found = None
        before = [i for i in order if frozen[i][0] <= ts]
        for i in before[-1:] + before[-2:-1]:
            if frozen[i][0] <= ts < frozen[i][1]:
                found = i
                break
        if found is None:
            continue
        late.append((found, e))
        if ACTIVITY[e["cat"]] == "kernel":
            kernel_step.append(e)
    for i, e in late:
        start, end = ns(e["ts"]), ns(e["ts"]) + max(0, ns(e.get("dur", 0)))
        st = steps[i]
        st["gpu_start"] = start if st["gpu_start"] is None else min(st["gpu_start"], start)
        st["gpu_end"] = end if st["gpu_end"] is None else max(st["gpu_end"], end)

    durations = [span_end(s) - span_start(s) for s in steps]
    lo = min(span_start(s) for s in steps)
    hi = max(span_end(s) for s in steps)
    intervals = sorted((ns(e["ts"]), ns(e["ts"]) + max(0, ns(e.get("dur", 0)))) for e in gpu_ops)
    busy = 0
    cur_start = cur_end = None
    for a, b in intervals + [(None, None)]:
        if a is not None and cur_end is not None and a <= cur_end:
            cur_end = max(cur_end, b)
            continue
        if cur_end is not None:
            busy += max(0, min(cur_end, hi) - max(cur_start, lo))
        cur_start, cur_end = a, b
    kernels = len(kernel_step)
    tiny = sum(1 for e in kernel_step if max(0, ns(e.get("dur", 0))) < 10000)
    return {
        "steps": len(steps),
        "source": source,
        "median_ms": median(durations) / 1e6,
        "gpu_busy_pct": 100.0 * busy / (hi - lo) if hi > lo else 0.0,
        "kernels_per_step": kernels / len(steps),
        "tiny_kernel_pct": 100.0 * tiny / kernels if kernels else 0.0,
    }


if __name__ == "__main__":
    for trace in sys.argv[1:]:
        r = summarize(trace)
        print(f"{trace.rsplit('/', 1)[-1]}: steps={r['steps']} source={r['source']} median_ms={r['median_ms']:.6f} "
              f"gpu_busy_pct={r['gpu_busy_pct']:.6f} kernels_per_step={r['kernels_per_step']:.6f} "
              f"tiny_kernel_pct={r['tiny_kernel_pct']:.6f}")
