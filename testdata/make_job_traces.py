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


def straggler_job(directory, loader_ms, compute_ms=15.0, transfer_ms=5.0, optimizer_ms=1.0, steps=6):
    """Ranks that wait for each other's data loading, for the joined what-if replay.

    Rank r's training thread waits `loader_ms[r]` ms per step in a single-process DataLoader, launches a
    compute kernel, an NCCL all-reduce and an optimizer kernel, all on stream 7, then reads the loss
    (`loss.item()`: a 4-byte copy to the host and a cudaStreamSynchronize) and starts the next step. The
    all-reduce ends on every rank `transfer_ms` after the last rank arrived (clock-aligned), so a rank that
    loads faster waits inside it. Every time below follows from that dependency chain.
    """
    world = len(loader_ms)
    launch = 0.005  # ms from a launch call to its kernel on an idle stream
    copy_ms = 0.002
    start = [0.0] * world  # host: where each rank's step starts
    rows = [[] for _ in range(world)]
    for s in range(steps):
        times = []
        for r in range(world):
            t0 = start[r]
            mm, comms, optimizer, item = (t0 + loader_ms[r] + d for d in (0.03, 0.11, 0.21, 0.31))
            compute = mm + launch  # the stream is idle: the previous step's copy ended before the sync returned
            times.append([t0, mm, comms, optimizer, item, compute, max(comms + launch, compute + compute_ms)])
        end = max(t[6] for t in times) + transfer_ms
        for r in range(world):
            t0, mm, comms, optimizer, item, compute, arrival = times[r]
            opt = max(optimizer + launch, end)
            copy = max(item + 0.01 + launch, opt + optimizer_ms)
            sync_end = copy + copy_ms + 0.004
            rows[r].append((t0, mm, comms, optimizer, item, compute, arrival, end, opt, copy, sync_end))
            start[r] = sync_end + 0.02
    os.makedirs(directory, exist_ok=True)
    for r in range(world):
        base_us = 1_700_000_000_000_000 / 1000 + r * 5_000_000
        us = lambda ms: round(base_us + ms * 1000.0, 3)
        span = lambda a, b: round((b - a) * 1000.0, 3)
        events = [
            {"ph": "M", "name": "process_name", "pid": 100 + r, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        ]
        correlation = 1000
        for s, (t0, mm, comms, optimizer, item, compute, arrival, end, opt, copy, sync_end) in enumerate(rows[r]):
            step_end = rows[r][s + 1][0] if s + 1 < steps else sync_end + 0.02
            pid = 100 + r
            events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (s + 1), "pid": pid,
                           "tid": 1, "ts": us(t0), "dur": span(t0, step_end) - 1})
            events.append({"ph": "X", "cat": "cpu_op", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                           "pid": pid, "tid": 1, "ts": us(t0 + 0.001), "dur": span(0, loader_ms[r]) - 2})
            for op, at, kernel, gpu_start, dur_ms, args in (
                    ("aten::mm", mm, "ampere_sgemm_128x64_nn", compute, compute_ms, {}),
                    ("record_param_comms", comms,
                     "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", arrival,
                     end - arrival, {"In msg nelems": MESSAGE_ELEMENTS, "Out msg nelems": MESSAGE_ELEMENTS,
                                     "dtype": "Float", "Group size": world, "Process Group Name": "0"}),
                    ("Optimizer.step#SGD.step", optimizer, "multi_tensor_apply_kernel", opt, optimizer_ms, {})):
                correlation += 1
                events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": 1, "ts": us(at - 0.01),
                               "dur": 40, "args": dict(args, **{"External id": correlation})})
                events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": 1,
                               "ts": us(at), "dur": 8, "args": {"correlation": correlation, "External id": correlation}})
                events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": us(gpu_start),
                               "dur": span(0, dur_ms),
                               "args": {"device": 0, "stream": 7, "correlation": correlation, "External id": correlation}})
            # loss.item(): the copy of the loss to the host, then the wait for it
            correlation += 1
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": pid, "tid": 1, "ts": us(item),
                           "dur": span(item, sync_end + 0.005), "args": {"External id": correlation}})
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": pid, "tid": 1,
                           "ts": us(item + 0.001), "dur": span(item + 0.001, sync_end + 0.004),
                           "args": {"External id": correlation}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": pid, "tid": 1,
                           "ts": us(item + 0.01), "dur": 5, "args": {"correlation": correlation, "External id": correlation}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": pid, "tid": 1,
                           "ts": us(item + 0.02), "dur": span(item + 0.02, sync_end), "args": {"correlation": correlation + 1}})
            events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7,
                           "ts": us(copy), "dur": span(0, copy_ms),
                           "args": {"device": 0, "stream": 7, "correlation": correlation, "External id": correlation,
                                    "bytes": 4, "memory bandwidth (GB/s)": 2.0}})
            correlation += 1
        trace = {"schemaVersion": 1, "deviceProperties": [DEVICE],
                 "distributedInfo": {"backend": "nccl", "rank": r, "world_size": world},
                 "traceEvents": events, "displayTimeUnit": "ms"}
        with open(os.path.join(directory, "rank-%d.json" % r), "w") as out:
            json.dump(trace, out, separators=(",", ":"))
            out.write("\n")


def main():
    job = os.path.join(ROOT, "rules.d", "job", "slow-collective.tests")
    # 256 MiB in 100 ms: busbw 2.68 GB/s on links of 300 GB/s
    write(os.path.join(job, "fire"), 2, 100.0, [60.0, 60.0], 160.0)
    # 256 MiB in 2 ms: busbw 134 GB/s
    write(os.path.join(job, "quiet"), 2, 100.0, [120.0, 120.0], 122.0)
    # rank 1 arrives 20 ms after rank 0: compute 100 ms (10..110), all-reduce 60..160 on rank 0, 80..160 on rank 1
    write(os.path.join(HERE, "job", "skewed"), 2, 100.0, [60.0, 80.0], 160.0)
    # rank 1 loads each batch in 40 ms, rank 0 in 20 ms: both run at rank 1's pace, rank 0 waiting in the all-reduce
    straggler_job(os.path.join(HERE, "job", "loader_straggler"), [20.0, 40.0])


if __name__ == "__main__":
    main()
