#!/usr/bin/env python3
"""Writes testdata/example_trace.json, the trace `scripts/demo.sh` checks.

Two profiled steps of the training loop modelled by testdata/scenarios/make_scenarios.py (a small CNN on an
A100, bf16 autocast) with three classic mistakes at once:

  - DataLoader(num_workers=0): every batch is loaded on the training thread while the GPU waits  (PTA106)
  - weight = torch.Tensor([0.1] * n).cuda() inside the loss's forward, copied every step         (PTA101)
  - assert target.max() < n on a GPU tensor: a GPU->host sync in every step                       (PTA102)

To stay small (< 300 KB) the JSON is written compactly, without the ac2g flow events (the correlation ids in
the args link launches and GPU ops the same way), without the allocator's [memory] instants and without
args no rule reads (per-kernel occupancy, event indices).
Deterministic: the same script always writes the same bytes.

    python3 testdata/make_example_trace.py
"""

import dataclasses
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "scenarios"))

import make_scenarios as scenarios  # noqa: E402

PROGRAM = dataclasses.replace(scenarios.WELL_TUNED, num_workers=0, loss="tensor_every_step",
                              label_check="assert_item")
KERNEL_ARGS = ("External id", "device", "context", "stream", "correlation", "grid", "block")
UNUSED_ARGS = ("Ev Idx", "Record function id")


def compact(event: dict) -> dict:
    args = event.get("args")
    if event.get("cat") == "kernel":
        event = dict(event, args={k: v for k, v in args.items() if k in KERNEL_ARGS})
    elif isinstance(args, dict) and any(k in args for k in UNUSED_ARGS):
        event = dict(event, args={k: v for k, v in args.items() if k not in UNUSED_ARGS})
    return event


def main() -> None:
    trace = scenarios.record(PROGRAM, steps=2)
    trace["traceEvents"] = [compact(e) for e in trace["traceEvents"]
                           if e.get("cat") not in ("ac2g", "cpu_instant_event")]
    head = {k: v for k, v in trace.items() if k not in ("traceEvents", "traceName")}
    lines = ["{"]
    for key, value in head.items():
        lines.append("%s:%s," % (json.dumps(key), json.dumps(value, separators=(",", ":"))))
    lines.append('"traceEvents":[')
    events = trace["traceEvents"]
    for i, event in enumerate(events):
        lines.append(json.dumps(event, separators=(",", ":")) + ("," if i + 1 < len(events) else ""))
    lines.append('],"traceName":%s}' % json.dumps(trace["traceName"]))
    data = ("\n".join(lines) + "\n").encode()
    with open(os.path.join(HERE, "example_trace.json"), "wb") as f:
        f.write(data)
    print("example_trace.json: %d bytes, %d events" % (len(data), len(events)))


if __name__ == "__main__":
    main()
