#!/usr/bin/env python3
"""Independent computation of `ptadvise summary` figures, for tests/unit/trace/test_corpus_summary.cpp.

Plain json/gzip, no ptadvise code: a straightforward re-implementation of the definitions in
docs/ANALYSIS.md (steps, GPU extent by launch, busy union, kernels per step, tiny-kernel share, and the
compute / communication / copy shares per device, with kernel families from tests/tools/kernel_families.py).
Prints one line per trace with the numbers the C++ test asserts.

    python3 tests/tools/summary_expectations.py ../shared/traces/FILE.json.gz ...

With --compare PTADVISE (the ctest entry `summary_expectations`) it runs `PTADVISE summary --format json`
on every trace (files or directories) and checks that both agree: the same steps (count, source, steady
ones), the step period and median within 1%, kernels per step within 1%, and GPU busy, compute,
communication, copy, idle and tiny-kernel shares within 2 percentage points. It exits 1 on a disagreement,
and when fewer than MIN_COVERED traces with GPU activity and steady steps were compared.

    python3 tests/tools/summary_expectations.py --compare build/cli/ptadvise ../shared/traces
"""
import collections
import decimal
import gzip
import json
import os
import subprocess
import sys

import kernel_families
from expected_steps import (HOST_CATS, WINDOW_CATS, LAUNCH_CATS, ACTIVITY, GPU_SIDE_CATS, ns, as_int, median,
                            gpu_device, main_thread_markers, is_one_off, nest, annotation_steps, infer_steps,
                            anchor_class)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        data = json.load(f, parse_float=decimal.Decimal)  # exact decimal µs, no float rounding
    return data if isinstance(data, list) else data.get("traceEvents", [])


def merge(intervals):
    merged = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def device_shares(gpu_ops, windows, steady):
    """Per device, the steady windows split into compute, communication, copies and idle: each moment is
    counted once, in that order (compute first). Returns {device: (compute, communication, copy, idle)} in %."""
    span = sum(windows[i][1] - windows[i][0] for i in steady)
    by_device = collections.defaultdict(lambda: [[], [], [], []])
    family = {}
    for e in gpu_ops:
        kind = ACTIVITY[e.get("cat")]
        if kind == "kernel":
            name = e.get("name", "")
            if name not in family:
                family[name] = kernel_families.classify(name)
            category = 1 if family[name] == "communication" else 0
        else:
            category = 2 if kind == "memcpy" else 3
        start = ns(e["ts"])
        by_device[gpu_device(e)][category].append((start, start + max(0, ns(e.get("dur", 0)))))
    shares = {}
    for device, categories in by_device.items():
        cumulative, before, own = [], 0, []
        for intervals in categories:
            cumulative = merge([tuple(x) for x in cumulative] + intervals)
            covered = sum(max(0, min(b, windows[i][1]) - max(a, windows[i][0]))
                          for i in steady for a, b in cumulative)
            own.append(covered - before)
            before = covered
        pct = [100.0 * x / span if span > 0 else 0.0 for x in (own[0], own[1], own[2] + own[3], span - before)]
        shares[device] = tuple(pct)
    return shares


def summarize(path):
    events = [e for e in load(path) if isinstance(e, dict)]
    runtime_by_corr = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS:
            corr = as_int(e.get("args", {}).get("correlation", -1))
            if corr is not None and corr >= 0 and corr not in runtime_by_corr:
                runtime_by_corr[corr] = e

    threads = nest(events)
    steps = main_thread_markers(events)
    source = "ProfilerStep"
    if steps:
        # A ProfilerStep holding the same number (>= 2) of iterations in every step is split into them.
        key = steps[0]["thread"]
        parts = []
        for st in steps:
            found = annotation_steps(events, st["start"], st["end"], key, threads)
            if not found or found[2] == "ranges":
                parts = None
                break
            # A step that fetches batches is split by its fetches or not at all.
            fetches = [e for e in events if e.get("ph") == "X" and anchor_class(e["name"]) == "loader"
                       and str(e.get("pid")) == key[0] and str(e.get("tid")) == key[1]
                       and st["start"] <= ns(e["ts"]) < st["end"]]
            if fetches and anchor_class(found[3]) != "loader":
                parts = None
                break
            parts.append(found[0])
        if parts and len({len(p) for p in parts}) == 1 and len(parts[0]) >= 2:
            split = []
            for st, cuts in zip(steps, parts):
                cuts[0]["start"] = st["start"]
                cuts[-1]["end"] = st["end"]
                split.extend({"start": c["start"], "end": max(c["start"], c["end"])} for c in cuts)
            steps = split
    if not steps:
        found = annotation_steps(events, threads=threads)
        if found:
            steps = found[0]
            source = "annotations"
    if not steps:
        steps = infer_steps(events, runtime_by_corr, threads)
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
    kernel_index = {}
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
            kernel_index[id(e)] = s

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
            kernel_index[id(e)] = found
    for i, e in late:
        start, end = ns(e["ts"]), ns(e["ts"]) + max(0, ns(e.get("dur", 0)))
        st = steps[i]
        st["gpu_start"] = start if st["gpu_start"] is None else min(st["gpu_start"], start)
        st["gpu_end"] = end if st["gpu_end"] is None else max(st["gpu_end"], end)

    # Periods (docs/ANALYSIS.md): host start to the next host start, or the GPU-side period (first GPU op
    # launched in the step to the next step's) when longer; the last step uses its CPU interval / GPU extent.
    n = len(steps)
    first_launched = [None] * n
    for e in gpu_ops:
        call = runtime_by_corr.get(as_int(e.get("args", {}).get("correlation", -1)))
        if call is None:
            continue
        i = step_at(ns(call["ts"]), lambda s: s["start"], lambda s: s["end"])
        if i is not None and (first_launched[i] is None or ns(e["ts"]) < first_launched[i]):
            first_launched[i] = ns(e["ts"])
    for i, st in enumerate(steps):
        if first_launched[i] is None:
            first_launched[i] = st["gpu_start"]
    # A lone step whose tail after its last recorded event is longer than all before it was closed by the
    # profiler's stop: it ends with that event.
    if n == 1 and source != "whole-window":
        st = steps[0]
        marker_free = [e for e in events if e.get("ph") == "X" and e.get("cat") in WINDOW_CATS
                       and not str(e.get("name", "")).startswith("ProfilerStep#")
                       and st["start"] <= ns(e["ts"]) < st["end"]]
        content_end = max((ns(e["ts"]) + max(0, ns(e.get("dur", 0))) for e in marker_free), default=None)
        if content_end is not None and st["start"] < content_end < st["end"] and \
                st["end"] - content_end > content_end - st["start"]:
            st["end"] = content_end
    periods = []
    for i, st in enumerate(steps):
        host = steps[i + 1]["start"] - st["start"] if i + 1 < n else st["end"] - st["start"]
        gpu = 0
        if first_launched[i] is not None:
            if i + 1 < n and first_launched[i + 1] is not None:
                gpu = first_launched[i + 1] - first_launched[i]
            else:
                gpu = st["gpu_end"] - first_launched[i]
        periods.append(max(0, host, gpu))
    excluded = [False] * n
    if n >= 2:
        # Events per step, counted like the C++ side: host events by time, GPU-side events by their launch.
        counts = [0] * n
        host_events = [e for e in events if e.get("ph") == "X" and e.get("cat") in HOST_CATS | {"collective_comm"}]
        for e in host_events:
            i = step_at(ns(e["ts"]), lambda s: s["start"], lambda s: s["end"])
            if i is not None:
                counts[i] += 1
        for e in events:
            if e.get("ph") == "X" and e.get("cat") in GPU_SIDE_CATS:
                call = runtime_by_corr.get(as_int(e.get("args", {}).get("correlation", -1)))
                if call is not None:
                    i = step_at(ns(call["ts"]), lambda s: s["start"], lambda s: s["end"])
                    if i is not None:
                        counts[i] += 1
        for i, e in late:
            counts[i] += 1
        one_off = [0] * n
        for e in host_events:
            if e.get("cat") in LAUNCH_CATS and is_one_off(e["name"]):
                i = step_at(ns(e["ts"]), lambda s: s["start"], lambda s: s["end"])
                if i is not None:
                    one_off[i] += 1
        others = sorted(counts[:-1])
        others_gpu = any(st["gpu_start"] is not None for st in steps[:-1])
        # A stub last step: a tenth of the other's events in a tenth of its period.
        stub = 10 * counts[-1] < others[0] and 10 * periods[-1] < periods[0]
        comparable = len(others) >= 2 or (others_gpu and steps[-1]["gpu_start"] is None) or stub
        if comparable and 2 * counts[-1] < others[len(others) // 2]:
            excluded[-1] = True
        # Steps inferred from the kernel sequence: the last ends with its own last launch and lacks the host
        # time before the next iteration's launches; it is left out while two others remain.
        if source == "inferred" and n >= 3:
            excluded[-1] = True
        # Likewise the last annotation iteration when it ends with its anchor (an optimizer step, a range)
        # and the others hold more than 1% of their period after theirs (upper medians, as the C++ side).
        if source == "annotations" and n >= 3 and steps[-1].get("anchor_end") is not None:
            tails = [max(0, steps[k + 1]["start"] - steps[k]["anchor_end"]) for k in range(n - 1)
                     if steps[k].get("anchor_end") is not None]
            held = [periods[k] for k in range(n - 1) if steps[k].get("anchor_end") is not None]
            if tails and 100 * sorted(tails)[len(tails) // 2] > sorted(held)[len(held) // 2]:
                excluded[-1] = True
        whole = n - 1 if excluded[-1] else n
        for i in range(whole - 1):
            later = periods[i + 1:whole]
            ref = median(later)
            ratio = periods[i] / ref if ref > 0 else 0
            extra_work = one_off[i] > median(one_off[i + 1:whole])
            # Length alone is no warm-up when as long a step (3/4) comes back after a steady one.
            alone, steady_seen = True, False
            for later_period in later:
                if steady_seen and 4 * later_period >= 3 * periods[i]:
                    alone = False
                steady_seen = steady_seen or later_period < 1.5 * ref
            if (ratio >= 1.5 and len(later) >= 2 and alone) or (extra_work and ratio >= 1.1):
                excluded[i] = True
                continue
            break
    steady = [i for i in range(n) if not excluded[i]]
    # Windows tile time from each step's period start (the GPU's first launched op when the GPU's median
    # period is the longer, else the host start) to the next one's; the last for its period.
    gpu_periods = []
    host_periods = []
    for i, st in enumerate(steps):
        host_periods.append(steps[i + 1]["start"] - st["start"] if i + 1 < n else st["end"] - st["start"])
        if first_launched[i] is None:
            gpu_periods.append(0)
        elif i + 1 < n and first_launched[i + 1] is not None:
            gpu_periods.append(first_launched[i + 1] - first_launched[i])
        else:
            gpu_periods.append(st["gpu_end"] - first_launched[i])
    gpu_paced = sorted(gpu_periods)[n // 2] > sorted(host_periods)[n // 2]
    base = [first_launched[i] if gpu_paced and first_launched[i] is not None else st["start"]
            for i, st in enumerate(steps)]
    # A whole window is timed from its first GPU op to the end of its last (its edges are profiling's).
    if source == "whole-window" and steps[0]["gpu_start"] is not None and steps[0]["gpu_end"] > steps[0]["gpu_start"]:
        base[0] = steps[0]["gpu_start"]
        periods[0] = steps[0]["gpu_end"] - steps[0]["gpu_start"]
    windows = []
    cursor = None
    for i in range(n):
        a = base[i] if cursor is None else max(base[i], cursor)
        b = base[i + 1] if i + 1 < n else base[i] + periods[i]
        b = max(a, b)
        windows.append((a, b))
        cursor = b
    intervals = sorted((ns(e["ts"]), ns(e["ts"]) + max(0, ns(e.get("dur", 0)))) for e in gpu_ops)
    merged = []
    for a, b in intervals:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    span = sum(windows[i][1] - windows[i][0] for i in steady)
    busy = 0
    for i in steady:
        lo, hi = windows[i]
        busy += sum(max(0, min(b, hi) - max(a, lo)) for a, b in merged)
    steady_set = set(steady)
    counted = [e for e in kernel_step if kernel_index.get(id(e)) in steady_set]
    kernels = len(counted)
    tiny = sum(1 for e in counted if max(0, ns(e.get("dur", 0))) < 10000)
    steady_periods = [periods[i] for i in steady]
    shares = device_shares(gpu_ops, windows, steady) if steady else {}
    average = [sum(v[k] for v in shares.values()) / len(shares) if shares else 0.0 for k in range(4)]
    return {
        "compute_busy_pct": average[0],
        "communication_pct": average[1],
        "copy_pct": average[2],
        "idle_pct": average[3],
        "device_shares": shares,
        "steps": n,
        "source": source,
        "steady": len(steady),
        "median_ms": median(steady_periods) / 1e6 if steady_periods else 0.0,
        "period_ms": sum(steady_periods) / len(steady_periods) / 1e6 if steady_periods else 0.0,
        "gpu_busy_pct": 100.0 * busy / span if span > 0 else 0.0,
        "kernels_per_step": kernels / len(steady) if steady else 0.0,
        "tiny_kernel_pct": 100.0 * tiny / kernels if kernels else 0.0,
    }


# The bar for the independent check of the period and busy definitions.
MIN_COVERED = 15
PERIOD_TOLERANCE = 0.01  # relative, periods and kernels per step
SHARE_TOLERANCE = 2.0    # percentage points


def trace_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith((".json", ".json.gz")):
                    yield os.path.join(path, name)
        else:
            yield path


def compare(ptadvise, paths):
    """Exit status 0 when ptadvise's summary agrees with the computation above on every trace."""
    problems, covered, checked = [], 0, 0
    for trace in trace_files(paths):
        name = os.path.basename(trace)
        run = subprocess.run([ptadvise, "summary", "--format", "json", trace], capture_output=True, text=True)
        if run.returncode != 0:
            problems.append(f"{name}: ptadvise summary exited {run.returncode}: {run.stderr.strip()}")
            continue
        got = json.loads(run.stdout)
        want = summarize(trace)
        checked += 1
        steps = got["steps"]
        mismatches = []
        for key, value in (("count", want["steps"]), ("source", want["source"]), ("steady", want["steady"])):
            if steps[key] != value:
                mismatches.append(f"steps.{key} {steps[key]} != {value}")
        for key, have, expected in (("period_ms", steps["period_ms"], want["period_ms"]),
                                    ("median_ms", steps["median_ms"], want["median_ms"]),
                                    ("kernels_per_step", got["kernels_per_step"], want["kernels_per_step"])):
            if abs(have - expected) > PERIOD_TOLERANCE * max(abs(expected), 1e-6):
                mismatches.append(f"{key} {have:.6g} != {expected:.6g}")
        for key in ("gpu_busy_pct", "compute_busy_pct", "communication_pct", "copy_pct", "idle_pct",
                    "tiny_kernel_pct"):
            if abs(got[key] - want[key]) > SHARE_TOLERANCE:
                mismatches.append(f"{key} {got[key]:.3f} != {want[key]:.3f}")
        has_gpu = want["kernels_per_step"] > 0 or want["gpu_busy_pct"] > 0
        if has_gpu and want["steady"] > 0 and not mismatches:
            covered += 1
        status = "ok" if not mismatches else "DIFFERS: " + "; ".join(mismatches)
        print(f"{name}: period {steps['period_ms']:.3f} ms (independent {want['period_ms']:.3f}), busy "
              f"{got['gpu_busy_pct']:.2f}% ({want['gpu_busy_pct']:.2f}%): {status}")
        if mismatches:
            problems.append(f"{name}: {'; '.join(mismatches)}")
    print(f"{checked} traces compared, {covered} with GPU activity and steady steps agree "
          f"(at least {MIN_COVERED} needed)")
    for problem in problems:
        print("error: " + problem, file=sys.stderr)
    if covered < MIN_COVERED:
        print(f"error: only {covered} traces with GPU activity and steady steps agree", file=sys.stderr)
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3:]))
    for trace in sys.argv[1:]:
        r = summarize(trace)
        print(f"{trace.rsplit('/', 1)[-1]}: steps={r['steps']} source={r['source']} steady={r['steady']} "
              f"period_ms={r['period_ms']:.6f} median_ms={r['median_ms']:.6f} "
              f"gpu_busy_pct={r['gpu_busy_pct']:.6f} kernels_per_step={r['kernels_per_step']:.6f} "
              f"tiny_kernel_pct={r['tiny_kernel_pct']:.6f} compute_busy_pct={r['compute_busy_pct']:.6f} "
              f"communication_pct={r['communication_pct']:.6f} copy_pct={r['copy_pct']:.6f} "
              f"idle_pct={r['idle_pct']:.6f}")
