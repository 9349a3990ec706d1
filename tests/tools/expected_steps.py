"""Steps as docs/ANALYSIS.md defines them, re-implemented in plain Python for summary_expectations.py:
the main thread's step markers, annotation steps (one-off steps left out), and steps inferred from the
launches when a trace has no markers. Also the event categories and number helpers both files use.
"""
import collections
import decimal

CPU_CATS = {None, "", "cpu_op", "Operator", "user_annotation"}
HOST_CATS = {None, "", "cpu_op", "Operator", "user_annotation", "python_function", "cuda_runtime", "Runtime",
             "cuda_driver"}
WINDOW_CATS = HOST_CATS | {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_sync",
                           "gpu_user_annotation", "collective_comm"}
LAUNCH_CATS = {"cuda_runtime", "Runtime", "cuda_driver"}
ACTIVITY = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
            "gpu_memset": "memset", "Memset": "memset"}
GPU_SIDE_CATS = set(ACTIVITY) | {"cuda_sync", "gpu_user_annotation"}


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


def gpu_device(e):
    pid = as_int(e.get("pid"))
    if pid is not None:
        return pid
    return as_int(e.get("args", {}).get("device", -1))


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
        steps.append({"name": e["name"], "start": start, "end": start + max(0, ns(e.get("dur", 0))),
                      "thread": best})
    return steps


def is_one_off(name):
    """Warm-up work: driver allocations, cuDNN autotuning, module loading (docs/ANALYSIS.md)."""
    return (name in {"cudaMalloc", "cudaFree", "hipMalloc", "hipFree", "cuMemAlloc", "cuMemAlloc_v2", "cuMemFree",
                     "cuMemFree_v2", "cudaHostAlloc", "cudaMallocHost", "hipHostMalloc"}
            or (name.startswith("cudnn") and "Find" in name) or name.startswith("miopenFind")
            or name.startswith(("cuModuleLoad", "cuLibraryLoad", "hipModuleLoad")))


def anchor_class(name):
    if name.startswith("enumerate(DataLoader)#") and "__next__" in name:
        return "loader"
    if name.startswith("Optimizer.zero_grad#"):
        return "zero_grad"
    if name.startswith("Optimizer.step#"):
        return "step"
    return None


def nest(events):
    """(pid, tid) -> events sorted by (start, longer first), each with a 'parent' index into that list."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in HOST_CATS:
            by_thread[(str(e.get("pid")), str(e.get("tid")))].append(e)
    for key, items in by_thread.items():
        items.sort(key=lambda e: (ns(e["ts"]), -ns(e.get("dur", 0))))
        stack = []
        for i, e in enumerate(items):
            end = ns(e["ts"]) + max(0, ns(e.get("dur", 0)))
            while stack and stack[-1][1] + 1000 < end:
                stack.pop()
            e["_parent"] = stack[-1][0] if stack else None
            stack.append((i, end))
    return by_thread


def annotation_steps(events, from_ns=None, to_ns=None, thread=None, threads=None):
    """Iterations from data-loader / zero_grad / optimizer-step annotations or a covering user range."""
    threads = threads if threads is not None else nest(events)
    def anchors_of(items):
        out = collections.defaultdict(list)
        for i, e in enumerate(items):
            if e.get("cat") not in ("cpu_op", "Operator", "user_annotation"):
                continue
            start = ns(e["ts"])
            if from_ns is not None and not (from_ns <= start < to_ns):
                continue
            cls = anchor_class(e["name"])
            p, nested = e["_parent"], False
            while p is not None:
                if anchor_class(items[p]["name"]):
                    nested = True
                p = items[p]["_parent"]
            if cls and not nested:
                out[e["name"]].append(e)
            elif not cls and is_range(e) and not e["name"].startswith("ProfilerStep#"):
                p = e["_parent"]  # the enclosing op or annotation: Python frames (with_stack) are looked through
                while p is not None and items[p].get("cat") not in ("cpu_op", "Operator", "user_annotation"):
                    p = items[p]["_parent"]
                if p is None or items[p]["name"].startswith("ProfilerStep#"):
                    out[e["name"]].append(e)
        for name in out:
            dedup = []
            for e in out[name]:
                if dedup and ns(dedup[-1]["ts"]) == ns(e["ts"]):
                    continue
                dedup.append(e)
            out[name] = dedup
        return out
    def count_anchors(items):
        return sum(1 for e in items if e.get("cat") in ("cpu_op", "Operator", "user_annotation")
                   and anchor_class(e["name"]))
    if thread is None:
        cpu = sorted(threads, key=lambda k: (-count_anchors(threads[k]), not (k[0] == k[1])))
        order = cpu
    else:
        order = [thread]
    for key in order:
        items = threads[key]
        if from_ns is None:
            # Every op and annotation: nested ones lie inside their parents, and with with_stack Python frames
            # are the parents of every op.
            top = [e for e in items if e.get("cat") in ("cpu_op", "Operator", "user_annotation")]
            if not top:
                continue
            lo = min(ns(e["ts"]) for e in top)
            hi = max(ns(e["ts"]) + max(0, ns(e.get("dur", 0))) for e in top)
        else:
            lo, hi = from_ns, to_ns
        found = anchors_of(items)
        closing = None
        for name in sorted(found):
            if anchor_class(name) == "step":
                if closing is None or len(found[name]) > len(found[closing]):
                    closing = name

        def steps_each(starts, ends):
            # The same number (>= 1) of optimizer steps in every stretch, none before the first; 1 without any.
            if not closing:
                return 1
            if ns(found[closing][0]["ts"]) < ns(starts[0]["ts"]):
                return 0
            per = 0
            for a, end in zip(starts, ends):
                if end is None:
                    continue
                held = sum(1 for c in found[closing] if ns(a["ts"]) <= ns(c["ts"]) < end)
                if held == 0 or (per and held != per):
                    return 0
                per = held
            return per

        def next_starts(occ):
            return [ns(b["ts"]) for b in occ[1:]] + [None]

        cut, per = None, 0
        for wanted in ("loader", "range", "zero_grad"):
            for name in sorted(found):
                occ = found[name]
                if len(occ) < 2:
                    continue
                if wanted == "range":
                    if not closing or anchor_class(name):
                        continue
                    if not all(ns(b["ts"]) >= ns(a["ts"]) + ns(a.get("dur", 0)) for a, b in zip(occ, occ[1:])):
                        continue
                    per = steps_each(occ, [ns(e["ts"]) + ns(e.get("dur", 0)) for e in occ])
                    if per:
                        cut = ("ranges", name)
                        break
                    continue
                if anchor_class(name) != wanted:
                    continue
                per = steps_each(occ, next_starts(occ))
                if per:
                    cut = ("starts", name)
                    break
            if cut:
                break
        if not cut and closing and len(found[closing]) >= 2:
            cut = ("ends", closing)
        if not cut:
            best = None
            for name in sorted(found):
                occ = found[name]
                if anchor_class(name) or len(occ) < 2:
                    continue
                disjoint = all(ns(b["ts"]) >= ns(a["ts"]) + ns(a.get("dur", 0)) for a, b in zip(occ, occ[1:]))
                extent = ns(occ[-1]["ts"]) + ns(occ[-1].get("dur", 0)) - ns(occ[0]["ts"])
                covered = sum(ns(e.get("dur", 0)) for e in occ)
                if disjoint and extent > 0 and covered >= 0.5 * extent and (best is None or len(occ) > len(found[best])):
                    best = name
            if best:
                cut = ("ranges", best)
        if not cut:
            if thread is not None:
                return None
            continue
        how, name = cut
        occ = found[name]
        steps = []
        if how == "starts":
            for k, e in enumerate(occ):
                start = ns(e["ts"])
                end = ns(occ[k + 1]["ts"]) if k + 1 < len(occ) else hi
                after = [c for c in (found[closing] if closing else []) if ns(c["ts"]) >= start]
                if k + 1 == len(occ) and closing:
                    if not after:
                        break  # an anchor after the last optimizer step opens no iteration
                    if len(after) >= per:
                        c = after[per - 1]
                        end = min(hi, ns(c["ts"]) + ns(c.get("dur", 0)))
                # Where the iteration's (last) optimizer step ends (the last iteration ends there).
                anchor_end = None
                nth = max(1, per if closing else 1)
                if closing and len(after) >= nth:
                    c = after[nth - 1]
                    if ns(c["ts"]) < end or k + 1 == len(occ):
                        anchor_end = ns(c["ts"]) + ns(c.get("dur", 0))
                steps.append({"start": start, "end": max(start, end), "anchor_end": anchor_end})
        elif how == "ends":
            for k, e in enumerate(occ):
                start = lo if k == 0 else ns(occ[k - 1]["ts"]) + ns(occ[k - 1].get("dur", 0))
                end = ns(e["ts"]) + ns(e.get("dur", 0))
                steps.append({"start": start, "end": max(start, end)})
        else:
            steps = [{"start": ns(e["ts"]), "end": ns(e["ts"]) + ns(e.get("dur", 0)),
                      "anchor_end": ns(e["ts"]) + ns(e.get("dur", 0))} for e in occ]
        return steps, key, how, name
    return None


def is_range(e):
    """A user's range: a user_annotation, or where ranges are written like ops (Kineto's first versions,
    `Operator`; the legacy profiler, no category) a name without a namespace."""
    cat = e.get("cat")
    if cat == "user_annotation":
        return True
    return cat in ("Operator", "", None) and "::" not in e["name"]


CALL_CATS = {None, "", "cpu_op", "Operator", "user_annotation"}


def is_module_call(e):
    """An nn.Module call as the profiler records it (with_stack / with_modules): a Python frame."""
    return e.get("cat") == "python_function" and str(e.get("name", "")).startswith("nn.Module: ")


def window_home(chunk, runtime_by_corr, threads):
    """The CPU ops, annotations and nn.Module frames enclosing the launch calls of every kernel in `chunk`,
    innermost first (empty: the launches span top-level calls); kernels without a launch call are left out."""
    home = None
    for kern in chunk:
        call = runtime_by_corr.get(as_int(kern.get("args", {}).get("correlation", -1)))
        if call is None or "_parent" not in call:
            continue
        items = threads[(str(call.get("pid")), str(call.get("tid")))]
        chain, p = [], call["_parent"]
        while p is not None:
            if items[p].get("cat") in CALL_CATS or is_module_call(items[p]):
                chain.append(items[p])
            p = items[p]["_parent"]
        enclosing = {id(e) for e in chain}
        home = chain if home is None else [e for e in home if id(e) in enclosing]
        if not home:
            return []
    return home or []


def cuts_a_call(seq, offset, period, windows, runtime_by_corr, threads):
    """A boundary between windows inside one host call: the kernels beside it came from one launch call, or
    one nn.Module call encloses both windows, or both windows were launched from inside the same CPU op or
    annotation, or one from inside the other's (a model call's layers, not iterations)."""
    def call_of(kern):
        return runtime_by_corr.get(as_int(kern.get("args", {}).get("correlation", -1)))

    def ops(home):
        return [id(e) for e in home if e.get("cat") in CALL_CATS]

    prev = window_home(seq[offset:offset + period], runtime_by_corr, threads)
    for w in range(1, windows):
        first = offset + w * period
        call = call_of(seq[first])
        if call is not None and call is call_of(seq[first - 1]):
            return True  # one launch call (a graph replay) on both sides
        home = window_home(seq[offset + w * period: offset + (w + 1) * period], runtime_by_corr, threads)
        both = {id(e) for e in prev}
        if any(is_module_call(e) and id(e) in both for e in home):
            return True  # one model call holds both windows
        before, now = ops(prev), ops(home)
        if before and now and (before[0] in now or now[0] in before):
            return True
        prev = home
    return False


def framed_by_one_offs(names, offset, end):
    """Kernels outside the windows whose names no window runs, both before the first window and after the
    last: a prologue and an epilogue around the repeats, as one model call has around its layers."""
    total = collections.Counter(names)
    outside = collections.Counter(names[:offset] + names[end:])
    before = sum(1 for n in names[:offset] if outside[n] == total[n])
    after = sum(1 for n in names[end:] if outside[n] == total[n])
    return before > 0 and after > 0


def infer_steps(events, runtime_by_corr, threads=None):
    threads = threads if threads is not None else nest(events)
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
        if cuts_a_call(seq, offset, period, windows, runtime_by_corr, threads):
            continue
        if framed_by_one_offs(names, offset, offset + windows * period):
            continue
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
