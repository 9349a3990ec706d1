#!/usr/bin/env python3
"""Scale a real PyTorch-profiler (Kineto) trace to a target size by repeating its steps.

The result is a plausible longer run of the same program: every copy of the profiled window is shifted
in time by the window's length, so copies follow each other without overlapping; `ProfilerStep#N` markers
are renumbered so step numbers keep increasing; and every id that links events (correlation, External id,
flow ids, Python id / parent id, Ev Idx, Record function id, autograd Sequence number) is offset per copy,
so links stay inside their own copy and no id is shared between copies.

The source is read whole (sources are < 100 MB); the output is streamed one event at a time, so
generating 1 GB needs memory for the source only. Standard library only.

    gen_trace.py SOURCE.json[.gz] OUT.json --size 100M
    gen_trace.py --verify OUT.json --source SOURCE.json[.gz]
"""

import argparse
import decimal
import gzip
import json
import re
import sys

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")

# args keys holding ids that link events to each other; value 0 of "External id" means "none" in 2021
# traces, so only positive values of those are shifted.
ID_ARGS = ("correlation", "Python id", "Python parent id", "Ev Idx", "Record function id", "Sequence number",
           "wait_on_cuda_event_record_corr_id")
EXTERNAL_ID_ARGS = ("External id", "external id")
# args keys holding timestamps in the trace's µs time base.
TIME_ARGS = ("external ts",)


def open_maybe_gzip(path, mode):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, mode)
    return open(path, mode)


def parse_size(text):
    units = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}  # decimal, like the MB/s figures
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)i?B?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: expected e.g. 100M or 1G")
    return int(float(match.group(1)) * units[match.group(2).upper()])


def load_source(path):
    with open_maybe_gzip(path, "rb") as f:
        data = json.load(f)
    if isinstance(data, list):  # 2020 bare-array form
        return None, data
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        sys.exit(f"gen_trace: {path}: expected a Kineto trace (object with traceEvents, or an array of events)")
    return data, data["traceEvents"]


def as_number(value):
    """ts/dur as written: int, float or a decimal string; returns a float for window arithmetic."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def is_global_marker(event):
    # Written once per profiling session: the profiler's own span and its window markers.
    return event.get("cat") == "Trace" or (event.get("ph") in ("i", "I") and event.get("s") == "g")


def shift_time(value, delta_us):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + delta_us
    if isinstance(value, float):
        return round(value + delta_us, 3)
    if isinstance(value, str):
        try:
            shifted = decimal.Decimal(value) + delta_us
        except decimal.InvalidOperation:
            return value
        return str(shifted)
    return value


def shift_id(value, offset, positive_only=False):
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    if value < 0 or (positive_only and value == 0):
        return value
    return value + offset


class Plan:
    """What is repeated, by how much time and ids each copy moves, and how steps are renumbered."""

    def __init__(self, events):
        self.once = []      # metadata and session markers: written once
        self.repeated = []  # everything else: written once per copy
        window_start = None
        window_end = None
        max_id = 0
        step_numbers = []
        for event in events:
            if not isinstance(event, dict):
                continue
            if event.get("ph") == "M" or is_global_marker(event):
                self.once.append(event)
                continue
            self.repeated.append(event)
            ts = as_number(event.get("ts"))
            if ts is not None:
                end = ts + max(as_number(event.get("dur")) or 0.0, 0.0)
                window_start = ts if window_start is None else min(window_start, ts)
                window_end = end if window_end is None else max(window_end, end)
            if event.get("ph") in ("s", "f", "t") and isinstance(event.get("id"), int):
                max_id = max(max_id, event["id"])
            args = event.get("args")
            if isinstance(args, dict):
                for key in ID_ARGS + EXTERNAL_ID_ARGS:
                    value = args.get(key)
                    if isinstance(value, int) and not isinstance(value, bool):
                        max_id = max(max_id, value)
            match = STEP_NAME.match(str(event.get("name", "")))
            if match and event.get("cat") in ("user_annotation", "cpu_op", "Operator", None):
                step_numbers.append(int(match.group(1)))
        if window_start is None:
            sys.exit("gen_trace: the source has no timed events to repeat")
        # Whole µs, so integer timestamps stay integers; +1 keeps the copies strictly apart.
        self.period_us = int(window_end - window_start) + 1
        # One stride for every id family keeps each family unique and is easy to check.
        self.id_stride = 10 ** len(str(max_id + 1))
        self.step_numbers = sorted(set(step_numbers))
        self.step_stride = (self.step_numbers[-1] - self.step_numbers[0] + 1) if self.step_numbers else 0

    def copy_event(self, event, k):
        if k == 0:
            return event
        out = dict(event)
        delta = k * self.period_us
        id_offset = k * self.id_stride
        if "ts" in out:
            out["ts"] = shift_time(out["ts"], delta)
        if out.get("ph") in ("s", "f", "t") and "id" in out:
            out["id"] = shift_id(out["id"], id_offset)
        if self.step_stride:
            name = out.get("name")
            if isinstance(name, str):
                match = STEP_NAME.match(name)
                if match:
                    out["name"] = f"ProfilerStep#{int(match.group(1)) + k * self.step_stride}"
        args = out.get("args")
        if isinstance(args, dict):
            args = dict(args)
            for key in ID_ARGS:
                if key in args:
                    args[key] = shift_id(args[key], id_offset)
            for key in EXTERNAL_ID_ARGS:
                if key in args:
                    args[key] = shift_id(args[key], id_offset, positive_only=True)
            for key in TIME_ARGS:
                if key in args:
                    args[key] = shift_time(args[key], delta)
            out["args"] = args
        return out

    def once_event(self, event, copies):
        """Session markers stretch to cover all copies."""
        extra = (copies - 1) * self.period_us
        if event.get("cat") == "Trace" and "dur" in event:
            out = dict(event)
            out["dur"] = shift_time(out["dur"], extra)
            return out
        if event.get("name") == "Record Window End":
            out = dict(event)
            out["ts"] = shift_time(out["ts"], extra)
            return out
        return event


def encode(event):
    return json.dumps(event, ensure_ascii=False)


def copy_size(plan):
    return sum(len(encode(e).encode("utf-8")) + 2 for e in plan.repeated)


def generate(args):
    header, events = load_source(args.source)
    plan = Plan(events)
    per_copy = copy_size(plan)
    copies = args.copies if args.copies else max(1, round(args.size / per_copy))
    out = open(args.output, "w", encoding="utf-8", newline="\n")
    with out:
        if header is not None:
            # Keep the writer's key order; traceEvents is streamed where it stood.
            out.write("{\n")
            first = True
            for key, value in header.items():
                if not first:
                    out.write(",\n")
                first = False
                out.write(f"  {json.dumps(key)}: ")
                if key == "traceEvents":
                    write_events(out, plan, copies)
                else:
                    out.write(json.dumps(value, ensure_ascii=False))
            out.write("\n}\n")
        else:
            write_events(out, plan, copies)
            out.write("\n")
    steps = len(plan.step_numbers) * copies
    print(f"gen_trace: wrote {args.output}: {copies} copies of {len(plan.repeated)} events "
          f"(+{len(plan.once)} once), period {plan.period_us} us, id stride {plan.id_stride}, "
          f"{steps} ProfilerSteps", file=sys.stderr)


def write_events(out, plan, copies):
    out.write("[\n")
    first = True
    for event in plan.once:
        if event.get("ph") == "M":
            out.write(("" if first else ",\n") + "  " + encode(plan.once_event(event, copies)))
            first = False
    batch = []
    for k in range(copies):
        for event in plan.repeated:
            batch.append(encode(plan.copy_event(event, k)))
            if len(batch) >= 4096:
                out.write(("" if first else ",\n") + "  " + ",\n  ".join(batch))
                first = False
                batch = []
    if batch:
        out.write(("" if first else ",\n") + "  " + ",\n  ".join(batch))
        first = False
    for event in plan.once:
        if event.get("ph") != "M":
            out.write(("" if first else ",\n") + "  " + encode(plan.once_event(event, copies)))
            first = False
    out.write("\n]")


def id_values(events):
    """Per id family, the multiset of ids seen (as a Counter of value -> count)."""
    from collections import Counter
    families = {}
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("ph") in ("s", "f", "t") and isinstance(event.get("id"), int):
            families.setdefault(f"flow id ({event.get('cat')})", Counter())[event["id"]] += 1
        args = event.get("args")
        if isinstance(args, dict):
            for key in ID_ARGS + EXTERNAL_ID_ARGS:
                value = args.get(key)
                # The ids the generator shifts: >= 0, and > 0 for External id (0 means none there).
                lowest = 1 if key in EXTERNAL_ID_ARGS else 0
                if isinstance(value, int) and not isinstance(value, bool) and value >= lowest:
                    families.setdefault(key, Counter())[value] += 1
    return families


def verify(args):
    """Checks a generated file against its source: valid JSON, ids unique per copy, steps in time order."""
    _, source_events = load_source(args.source)
    plan = Plan(source_events)
    _, events = load_source(args.verify)
    repeated = [e for e in events if isinstance(e, dict) and e.get("ph") != "M" and not is_global_marker(e)]
    if len(repeated) % len(plan.repeated):
        sys.exit(f"verify: {len(repeated)} repeated events is not a multiple of {len(plan.repeated)}")
    copies = len(repeated) // len(plan.repeated)
    problems = []
    source_ids = id_values(plan.repeated)
    output_ids = id_values(repeated)
    for family, counts in source_ids.items():
        got = output_ids.get(family, {})
        # Each distinct id of the source must appear as `copies` distinct ids, with the same multiplicity.
        if len(got) != copies * len(counts):
            problems.append(f"{family}: {len(got)} distinct ids, expected {copies} x {len(counts)}")
        if sum(got.values()) != copies * sum(counts.values()):
            problems.append(f"{family}: {sum(got.values())} uses, expected {copies} x {sum(counts.values())}")
    steps = []
    for e in repeated:
        match = STEP_NAME.match(str(e.get("name", "")))
        if match and e.get("cat") in ("user_annotation", "cpu_op", "Operator", None):
            steps.append((as_number(e["ts"]), as_number(e.get("dur")) or 0.0, int(match.group(1))))
    steps.sort()
    numbers = [n for _, _, n in steps]
    if numbers != sorted(numbers) or len(set(numbers)) != len(numbers):
        problems.append("ProfilerStep numbers are not unique and increasing in time")
    for (ts_a, dur_a, n_a), (ts_b, _, n_b) in zip(steps, steps[1:]):
        if ts_a + dur_a > ts_b + 1:
            problems.append(f"ProfilerStep#{n_a} overlaps ProfilerStep#{n_b}")
            break
    if len(numbers) != copies * len(plan.step_numbers):
        problems.append(f"{len(numbers)} ProfilerSteps, expected {copies} x {len(plan.step_numbers)}")
    for p in problems:
        print(f"verify: {p}", file=sys.stderr)
    print(f"verify: {args.verify}: {copies} copies, {len(events)} events, {len(numbers)} steps, "
          f"{len(source_ids)} id families checked: {'FAILED' if problems else 'ok'}", file=sys.stderr)
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", nargs="?", help="real trace to scale (.json or .json.gz)")
    parser.add_argument("output", nargs="?", help="generated trace (.json, uncompressed)")
    parser.add_argument("--size", type=parse_size, default=parse_size("100M"),
                        help="approximate output size, e.g. 100M or 1G (default 100M)")
    parser.add_argument("--copies", type=int, default=0, help="number of copies of the window (overrides --size)")
    parser.add_argument("--verify", metavar="GENERATED", help="check GENERATED against --source instead")
    parser.add_argument("--source", dest="source_opt", help="source trace for --verify")
    args = parser.parse_args()
    if args.verify:
        args.source = args.source_opt or args.source
        if not args.source:
            parser.error("--verify needs --source SOURCE")
        return verify(args)
    if not args.source or not args.output:
        parser.error("SOURCE and OUTPUT are required")
    generate(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
