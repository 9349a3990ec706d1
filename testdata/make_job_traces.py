#!/usr/bin/env python3
"""Writes small hand-built multi-rank GPU traces with known answers (Kineto JSON, one file per rank).

Each rank runs STEPS identical steps of PERIOD ms on one A100: a compute kernel of COMPUTE ms starting 10 ms
into the step and one NCCL all-reduce of 256 MiB (float, group of WORLD ranks, process group "0") described by
a record_param_comms op whose launch is linked to the kernel by its correlation id. Rank r's all-reduce
starts `arrive[r]` ms into the step and every rank's all-reduce ends at the same moment, `end` ms into the
step. Rank r's clock runs `r * 5` s ahead of rank 0's, so only an alignment on collective ends lines them up.

    python3 testdata/make_job_traces.py        # rewrites every directory below
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STEPS = 4
PERIOD_MS = 200.0
MESSAGE_ELEMENTS = 64 * 1024 * 1024  # 256 MiB of float
DEVICE = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8,
          "computeMinor": 0, "numSms": 108}


def rank_trace(rank, world, compute_ms, arrive_ms, end_ms):
    base_us = 1_700_000_000_000_000 / 1000 + rank * 5_000_000  # each rank's clock is 5 s further ahead
    events = [
        {"ph": "M", "name": "process_name", "pid": 100 + rank, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    ]
    correlation = 1000
    for step in range(STEPS):
        t0 = base_us + step * PERIOD_MS * 1000
        events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (step + 1), "pid": 100 + rank,
                       "tid": 1, "ts": t0, "dur": PERIOD_MS * 1000 - 1})
        for name, start_ms, dur_ms, stream, args in (
                ("ampere_sgemm_128x64_nn", 10.0, compute_ms, 7, {}),
                ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", arrive_ms, end_ms - arrive_ms, 20,
                 {"In msg nelems": MESSAGE_ELEMENTS, "Out msg nelems": MESSAGE_ELEMENTS, "dtype": "Float",
                  "Group size": world, "Process Group Name": "0"})):
            correlation += 1
            launch_ts = t0 + start_ms * 1000 - 50
            op = "record_param_comms" if stream == 20 else "aten::mm"
            events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 100 + rank, "tid": 1, "ts": launch_ts - 5,
                           "dur": 20, "args": dict(args, **{"External id": correlation})})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100 + rank, "tid": 1,
                           "ts": launch_ts, "dur": 8, "args": {"correlation": correlation, "External id": correlation}})
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                           "ts": t0 + start_ms * 1000, "dur": dur_ms * 1000,
                           "args": {"device": 0, "stream": stream, "correlation": correlation,
                                    "External id": correlation}})
    return {"schemaVersion": 1, "deviceProperties": [DEVICE],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
            "traceEvents": events, "displayTimeUnit": "ms"}


def write(directory, world, compute_ms, arrive, end_ms):
    os.makedirs(directory, exist_ok=True)
    for rank in range(world):
        path = os.path.join(directory, "rank-%d.json" % rank)
        with open(path, "w") as out:
            json.dump(rank_trace(rank, world, compute_ms, arrive[rank], end_ms), out, separators=(",", ":"))
            out.write("\n")


def main():
    job = os.path.join(ROOT, "rules.d", "job", "slow-collective.tests")
    # 256 MiB in 100 ms: busbw 2.68 GB/s on links of 300 GB/s
    write(os.path.join(job, "fire"), 2, 100.0, [60.0, 60.0], 160.0)
    # 256 MiB in 2 ms: busbw 134 GB/s
    write(os.path.join(job, "quiet"), 2, 100.0, [120.0, 120.0], 122.0)
    # rank 1 arrives 20 ms after rank 0: compute 100 ms (10..110), all-reduce 60..160 on rank 0, 80..160 on rank 1
    write(os.path.join(HERE, "job", "skewed"), 2, 100.0, [60.0, 80.0], 160.0)


if __name__ == "__main__":
    main()
