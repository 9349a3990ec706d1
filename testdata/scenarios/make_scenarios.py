#!/usr/bin/env python3
"""Writes the scenario traces: a small CNN training loop, recorded as torch.profiler (Kineto, 2023+ format)
would record it, once with each classic training-loop mistake and once with its fix.

Run by hand from anywhere (Python 3 standard library only, deterministic):

    python3 testdata/scenarios/make_scenarios.py

It rewrites every *.json.gz beside this file, and the fire/quiet fixtures of rules PTA107-PTA121 in
rules.d/<group>/<name>.tests/. README.md beside it tells what each trace is and what ptadvise must find in it.

How the traces are made: `Sim` is a small model of one process running the loop. The host thread advances its
own clock through Python frames, CPU ops and CUDA runtime calls; each launch queues a GPU op on stream 7 that
starts when both the launch has happened and the stream is free, so the GPU drains its queue asynchronously
and the host runs ahead unless something blocks it (a stream synchronize, a pageable copy, a slow data
loader). Backward runs on the autograd engine's device thread, as it does for CUDA tensors. `TrainingLoop`
emits one step of `train.py` from a set of switches (`Program`), so each scenario is the same program with one
line changed. The profiler schedule is wait=1, warmup=1, active=8: steps 0-1 run unrecorded (the GPU queue is
warm when recording starts) and ProfilerStep#2..#9 are recorded.

This file holds the scenarios, the rule fixtures written from them and `main`; the model is in the modules
beside it, which other generators reach through this one (`record`, `write`, `SCENARIOS`, `WELL_TUNED`):

    scenario_tables.py         the GPUs, and the kernel names each precision runs on them
    scenario_sim.py            `Sim`, the process model
    scenario_program.py        `Program`, the switches, and the shape of the network
    scenario_loop.py           `TrainingLoop`: one step, from the parts in
    scenario_loop_base.py        its state and shared helpers,
    scenario_data_loading.py     the next batch and its copy to the GPU,
    scenario_forward.py          the network's and the loss's forward,
    scenario_backward.py         loss.backward() and the autograd graph,
    scenario_optimizer.py        zero_grad and SGD's step
    scenario_trace.py          `record`, `hash_program`, `dump`, `write`: a trace through the profiler schedule
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os

from scenario_loop import TrainingLoop
from scenario_program import Program
from scenario_sim import Sim
from scenario_trace import dump, hash_program, record, write

__all__ = ["FIXTURES", "Program", "SCENARIOS", "Sim", "TrainingLoop", "WELL_TUNED", "describe", "dump",
           "hash_program", "main", "record", "write"]

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------------------
# The scenarios: each mistake and its fix, plus the well-tuned loop.

WELL_TUNED = Program()

SCENARIOS = {
    # 1. weight = torch.Tensor([0.1] * n).cuda() inside the loss, every step  vs  register_buffer in __init__
    "01_loss_weight_every_step": dataclasses.replace(WELL_TUNED, loss="tensor_every_step"),
    "01_loss_weight_every_step_fixed": dataclasses.replace(WELL_TUNED, loss="buffer"),
    # 2. assert target.max() < n on a GPU tensor  vs  torch._assert_async (or the check in the data pipeline)
    "02_assert_on_gpu_tensor": dataclasses.replace(WELL_TUNED, label_check="assert_item"),
    "02_assert_on_gpu_tensor_fixed": dataclasses.replace(WELL_TUNED, label_check="assert_async"),
    # 3. logp[range(n), target]  vs  logp[torch.arange(n, device=logp.device), target]
    "03_python_list_index": dataclasses.replace(WELL_TUNED, pick="python_range"),
    "03_python_list_index_fixed": dataclasses.replace(WELL_TUNED, pick="arange"),
    # 4. nn.NLLLoss(weight) built inside forward  vs  built once in __init__
    "04_loss_module_built_in_step": dataclasses.replace(WELL_TUNED, loss="module_every_step"),
    "04_loss_module_built_in_step_fixed": dataclasses.replace(WELL_TUNED, loss="module_once"),
    # 5. DataLoader(num_workers=0)  vs  num_workers=4
    "05_dataloader_num_workers_0": dataclasses.replace(WELL_TUNED, num_workers=0),
    "05_dataloader_num_workers_0_fixed": dataclasses.replace(WELL_TUNED, num_workers=4),
    # 6. non_blocking copies from pageable memory  vs  pin_memory=True
    "06_pageable_batch_copy": dataclasses.replace(WELL_TUNED, pin_memory=False),
    "06_pageable_batch_copy_fixed": dataclasses.replace(WELL_TUNED, pin_memory=True),
    # 7. optimizer.zero_grad(set_to_none=False)  vs  set_to_none=True
    "07_zero_grad_without_set_to_none": dataclasses.replace(WELL_TUNED, set_to_none=False),
    "07_zero_grad_without_set_to_none_fixed": dataclasses.replace(WELL_TUNED, set_to_none=True),
    # 8. fp32 convolutions and matmuls on a V100  vs  autocast to fp16
    "08_fp32_on_v100": dataclasses.replace(WELL_TUNED, device="v100", precision="fp32"),
    "08_fp32_on_v100_fixed": dataclasses.replace(WELL_TUNED, device="v100", precision="fp16"),
    # 9. images.to("cuda") without non_blocking: the copy is followed by a stream sync every step
    "09_blocking_batch_copy": dataclasses.replace(WELL_TUNED, non_blocking=False),
    "09_blocking_batch_copy_fixed": dataclasses.replace(WELL_TUNED, non_blocking=True),
    # 10. SGD(foreach=False): three kernels per parameter tensor  vs  the foreach implementation
    "10_single_tensor_optimizer": dataclasses.replace(WELL_TUNED, optimizer="single_tensor"),
    "10_single_tensor_optimizer_fixed": dataclasses.replace(WELL_TUNED, optimizer="foreach"),
    # 11. nn.Conv2d(..., bias=True) right before nn.BatchNorm2d  vs  bias=False
    "11_conv_bias_before_batchnorm": dataclasses.replace(WELL_TUNED, conv_bias=True),
    "11_conv_bias_before_batchnorm_fixed": dataclasses.replace(WELL_TUNED, conv_bias=False),
    # 12. torch.cuda.empty_cache() at the end of every step  vs  not calling it
    "12_empty_cache_every_step": dataclasses.replace(WELL_TUNED, empty_cache=True),
    "12_empty_cache_every_step_fixed": dataclasses.replace(WELL_TUNED, empty_cache=False),
    # 13. CUDA_LAUNCH_BLOCKING=1 left in the job's environment  vs  unset
    "13_cuda_launch_blocking": dataclasses.replace(WELL_TUNED, launch_blocking=True),
    "13_cuda_launch_blocking_fixed": dataclasses.replace(WELL_TUNED, launch_blocking=False),
    # 14. fp32 on an A100 with a large MLP head: matmuls on ampere_sgemm  vs  set_float32_matmul_precision("high")
    "14_fp32_matmul_without_tf32": dataclasses.replace(WELL_TUNED, precision="fp32_ampere", head="mlp"),
    "14_fp32_matmul_without_tf32_fixed": dataclasses.replace(WELL_TUNED, precision="tf32", head="mlp"),
    # 15. bf16 classifier with 1001 classes (dims not a multiple of 8)  vs  padded to 1008
    "15_half_dims_not_multiple_of_8": dataclasses.replace(WELL_TUNED, classes=1001),
    "15_half_dims_not_multiple_of_8_fixed": dataclasses.replace(WELL_TUNED, classes=1008),
    # 16. batch 8: the GPU is mostly idle, waiting for launches, with 93% of its memory free  vs  batch 64
    "16_small_batch_memory_underused": dataclasses.replace(WELL_TUNED, batch=8),
    "16_small_batch_memory_underused_fixed": dataclasses.replace(WELL_TUNED, batch=64),
    # 17. 39 GB of the A100's 42 GB held outside the step (a large resident embedding table)  vs  30 GB
    "17_gpu_memory_nearly_full": dataclasses.replace(WELL_TUNED, resident_gb=39.0),
    "17_gpu_memory_nearly_full_fixed": dataclasses.replace(WELL_TUNED, resident_gb=30.0),
    # 18. profiler schedule without wait/warmup: step 0 (lazy module loading, allocator growth) is recorded
    "18_warmup_in_profiled_window": dataclasses.replace(WELL_TUNED, profile_from_start=True),
    "18_warmup_in_profiled_window_fixed": dataclasses.replace(WELL_TUNED, profile_from_start=False),
    # 19. torch.autograd.set_detect_anomaly(True) left on  vs  off
    "19_detect_anomaly": dataclasses.replace(WELL_TUNED, detect_anomaly=True),
    "19_detect_anomaly_fixed": dataclasses.replace(WELL_TUNED, detect_anomaly=False),
    # 20. images = preprocess(images) on the training thread after a loss.item() sync  vs  in the DataLoader workers
    "20_cpu_preprocess_in_step": dataclasses.replace(WELL_TUNED, preprocess="main_thread", log_loss=True),
    "20_cpu_preprocess_in_step_fixed": dataclasses.replace(WELL_TUNED, preprocess="workers", log_loss=True),
    # The well-tuned loop: bf16 autocast on an A100, 4 pinned workers, no syncs, set_to_none, foreach SGD.
    "well_tuned": WELL_TUNED,
}


def describe(name: str) -> str:
    """Figures of a written trace, for README.md: median step, GPU busy share, host waits."""
    with gzip.open(os.path.join(HERE, name + ".json.gz"), "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    mirrors = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "gpu_user_annotation")
    span = (min(steps[0][0], mirrors[0][0]), max(steps[-1][1], mirrors[-1][1]))
    busy, cursor = 0.0, span[0]
    for start, end in gpu:
        start, end = max(start, cursor), min(end, span[1])
        if end > start:
            busy += end - start
            cursor = end
    lengths = sorted(end - start for start, end in steps)
    syncs = sum(1 for e in events if e.get("name") == "cudaStreamSynchronize")
    return "%-40s median step %6.2f ms, GPU busy %5.1f%%, %d stream syncs" % (
        name, lengths[len(lengths) // 2] / 1000.0, 100.0 * busy / (span[1] - span[0]), syncs)


# Fixtures of rules PTA107-PTA121 (rules.d/<group>/<name>.tests/): the firing and the quiet program of the
# scenario each rule is about, recorded over 4 steps to keep them small.
RULES_DIR = os.path.join(HERE, "..", "..", "rules.d")
FIXTURES = {
    "memcpy/pageable-memcpy": "06_pageable_batch_copy",
    "memcpy/blocking-batch-copy": "09_blocking_batch_copy",
    "optimizer/zero-grad-without-set-to-none": "07_zero_grad_without_set_to_none",
    "optimizer/single-tensor-optimizer": "10_single_tensor_optimizer",
    "python-overhead/object-built-in-step": "04_loss_module_built_in_step",
    "model/conv-bias-before-batchnorm": "11_conv_bias_before_batchnorm",
    "memory/allocator-churn": "12_empty_cache_every_step",
    "debug-mode/anomaly-detection-enabled": "19_detect_anomaly",
    "debug-mode/launch-blocking-debug-mode": "13_cuda_launch_blocking",
    "tensor-cores/fp32-matmul-without-tf32": "14_fp32_matmul_without_tf32",
    "tensor-cores/half-precision-dims-not-multiple-of-8": "15_half_dims_not_multiple_of_8",
    "memory/gpu-memory-underused": "16_small_batch_memory_underused",
    "memory/gpu-memory-nearly-full": "17_gpu_memory_nearly_full",
    "profiling/warmup-in-profiled-window": "18_warmup_in_profiled_window",
    "host-work/host-bound-cpu-work": "20_cpu_preprocess_in_step",
}


def main() -> None:
    for name, program in SCENARIOS.items():
        write(name, program)
    for rule, scenario in FIXTURES.items():
        directory = os.path.join(RULES_DIR, rule + ".tests")
        write("fire", SCENARIOS[scenario], directory, steps=4)
        write("quiet", SCENARIOS[scenario + "_fixed"], directory, steps=4)
    for name in SCENARIOS:
        print(describe(name))


if __name__ == "__main__":
    main()
