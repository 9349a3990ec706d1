"""Recording and writing a scenario trace: `record` runs the training loop through the profiler schedule and
returns the trace as Kineto writes it, `hash_program` gives its stable trace_id, `dump` serialises it one event
per line and `write` gzips it reproducibly."""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import json
import os

from scenario_loop import TrainingLoop
from scenario_program import Program
from scenario_sim import AUTOGRAD_TID, BASE_TIME_NS, MAIN_TID, PID, STREAM
from scenario_tables import DEVICES

HERE = os.path.dirname(os.path.abspath(__file__))


def record(program: Program, steps: int = 8, seed: int = 7) -> dict:
    loop = TrainingLoop(program, seed)
    sim = loop.sim
    sim.allocated = int(program.resident_gb * 1e9)
    sim.reserved = (sim.allocated // (1 << 21) + 160) * (1 << 21)
    sim.launch_blocking = program.launch_blocking
    sim.lazy_loading = True  # CUDA 12's default (CUDA_MODULE_LOADING=LAZY)
    skipped = 0 if program.profile_from_start else 2
    # Unrecorded schedule steps (wait, warmup): the GPU queue and the allocator are warm when recording starts.
    for number in range(skipped):
        loop.step(number)
    sim.recording = True
    window_start = sim.now[MAIN_TID]
    # GPU ops launched in the warm-up step that still run when recording starts are recorded (CUPTI reports
    # them), their launch calls are not.
    sim.events.extend(e for e in sim.unrecorded_gpu if e["ts"] + e["dur"] > sim._ts(window_start))
    sim.now[AUTOGRAD_TID] = max(sim.now[AUTOGRAD_TID], window_start)
    # Frames already on the stack when recording starts are recorded from that moment.
    outer = contextlib.ExitStack()
    outer.enter_context(sim.py("train.py(1): <module>", overhead_us=0.0))
    outer.enter_context(sim.py("train.py(60): train_one_epoch", overhead_us=0.0))
    for number in range(skipped, skipped + steps):
        loop.step(number)
    outer.close()
    window_end = max(sim.now[MAIN_TID], sim.stream_free) + 20_000
    events = sim.events
    meta = []
    for pid, tid, key, value in (
            (PID, 0, "process_name", {"name": "python3"}), (PID, 0, "process_labels", {"labels": "CPU"}),
            (PID, 0, "process_sort_index", {"sort_index": PID}),
            (0, 0, "process_name", {"name": "python3"}), (0, 0, "process_labels", {"labels": "GPU 0"}),
            (0, 0, "process_sort_index", {"sort_index": 5000000}),
            (0, STREAM, "thread_name", {"name": "stream 7 "}), (0, STREAM, "thread_sort_index", {"sort_index": STREAM}),
            (PID, MAIN_TID, "thread_name", {"name": "thread %d (python3)" % MAIN_TID}),
            (PID, MAIN_TID, "thread_sort_index", {"sort_index": MAIN_TID}),
            (PID, AUTOGRAD_TID, "thread_name", {"name": "thread %d (pt_autograd_0)" % AUTOGRAD_TID}),
            (PID, AUTOGRAD_TID, "thread_sort_index", {"sort_index": AUTOGRAD_TID})):
        meta.append({"name": key, "ph": "M", "ts": sim._ts(window_start), "pid": pid, "tid": tid, "args": value})
    order = {"user_annotation": 0, "cpu_op": 0, "cpu_instant_event": 1, "python_function": 2, "cuda_runtime": 3,
             "ac2g": 3, "kernel": 3, "gpu_memcpy": 3, "gpu_memset": 3, "gpu_user_annotation": 4}
    events.sort(key=lambda e: (order.get(e.get("cat", ""), 5), e["ts"]))
    tail = [
        {"ph": "X", "cat": "Trace", "ts": sim._ts(window_start), "dur": sim._dur(window_end - window_start),
         "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
        {"name": "process_sort_index", "ph": "M", "ts": sim._ts(window_start), "pid": "Spans", "tid": 0,
         "args": {"sort_index": 536870912}},
        {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
         "tid": "Trace PyTorch Profiler", "ts": sim._ts(window_start)},
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": sim._ts(window_end)},
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [DEVICES[program.device]],
        "cupti_version": 22,
        "cuda_runtime_version": 12040,
        "with_stack": 1,
        "record_shapes": 1,
        "profile_memory": 1,
        "cuda_driver_version": 12040,
        "trace_id": "5C2D%028X" % (abs(hash_program(program)) % (1 << 112)),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": BASE_TIME_NS,
        "traceEvents": events + meta + tail,
        "traceName": "/tmp/traces/%s.pt.trace.json" % "worker0",
    }


def hash_program(program: Program) -> int:
    """A stable (not salted) hash of the switches, for the trace_id. Switches at their default are left out
    from `preprocess` on, so adding a switch keeps the trace_id of every earlier trace."""
    switches = dataclasses.astuple(program)
    names = [field.name for field in dataclasses.fields(Program)]
    first_optional = names.index("preprocess")
    defaults = dataclasses.astuple(Program())
    switches = switches[:first_optional] + tuple(
        value for value, default in zip(switches[first_optional:], defaults[first_optional:]) if value != default)
    value = 1469598103934665603
    for byte in repr(switches).encode():
        value = ((value ^ byte) * 1099511628211) % (1 << 64)
    return value


def dump(trace: dict) -> bytes:
    """One event per line, as Kineto writes them, so a reader can grep the unzipped file."""
    head = {k: v for k, v in trace.items() if k not in ("traceEvents", "traceName")}
    out = io.StringIO()
    out.write("{\n")
    for key, value in head.items():
        out.write("  %s: %s,\n" % (json.dumps(key), json.dumps(value)))
    out.write('  "traceEvents": [\n')
    events = trace["traceEvents"]
    for i, event in enumerate(events):
        out.write("  " + json.dumps(event) + (",\n" if i + 1 < len(events) else "\n"))
    out.write("  ],\n")
    out.write('  "traceName": %s\n}\n' % json.dumps(trace["traceName"]))
    return out.getvalue().encode()


def write(name: str, program: Program, directory: str = HERE, steps: int = 8) -> None:
    data = dump(record(program, steps=steps))
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name + ".json.gz")
    buffer = io.BytesIO()
    # mtime=0 and no file name in the header: the same input always gives the same bytes.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    print("%-40s %7d bytes json, %6d bytes gz" % (name, len(data), len(buffer.getvalue())))
