#!/usr/bin/env python3
"""Writes the fixture traces of rules PTA101-PTA106 into rules.d/<group>/<name>.tests/.

The traces come from the same deterministic training-loop model as testdata/scenarios (make_scenarios.py):
each firing fixture is the program with the mistake, each quiet fixture the program with its fix, recorded
over 4 steps to keep them small. The CPU-only fixtures of data-loader-stall are copies of the real
PyTorch 1.13 recordings in testdata/scenarios. Same input, same bytes: rerun after changing the model.

    python3 tests/unit/rules/make_rule_fixtures.py
"""

import os
import shutil
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCENARIOS_DIR = os.path.join(ROOT, "testdata", "scenarios")
sys.path.insert(0, SCENARIOS_DIR)

import make_scenarios as scenarios  # noqa: E402

RULES_DIR = os.path.join(ROOT, "rules.d")

# rule -> {fixture name: scenario}
FIXTURES = {
    "h2d-copy/h2d-copy-every-step": {
        "fire": "01_loss_weight_every_step",
        "fire-list-index": "03_python_list_index",
        "quiet": "01_loss_weight_every_step_fixed",
        "quiet-pageable-batch": "06_pageable_batch_copy",
    },
    "sync/sync-in-step": {
        "fire": "02_assert_on_gpu_tensor",
        "quiet": "02_assert_on_gpu_tensor_fixed",
    },
    "tiny-kernels/tiny-kernel-storm": {
        "fire": "16_small_batch_memory_underused",
        "quiet": "well_tuned",
    },
    "idle-gap/idle-gpu-gaps": {
        "fire": "05_dataloader_num_workers_0",
        "quiet": "well_tuned",
    },
    "tensor-cores/low-tensor-core-use": {
        "fire": "08_fp32_on_v100",
        "quiet": "08_fp32_on_v100_fixed",
    },
    "data-loader/data-loader-stall": {
        "fire": "05_dataloader_num_workers_0",
        "quiet": "05_dataloader_num_workers_0_fixed",
    },
}

# Real CPU-only recordings copied as they are: rule -> {fixture name: file in testdata/scenarios}
COPIES = {
    "data-loader/data-loader-stall": {
        "fire-cpu-only": "cpu_only_num_workers_0.json.gz",
        "quiet-cpu-only": "cpu_only_preloaded.json.gz",
    },
}


def main() -> None:
    for rule, fixtures in FIXTURES.items():
        directory = os.path.join(RULES_DIR, rule + ".tests")
        for name, scenario in fixtures.items():
            scenarios.write(name, scenarios.SCENARIOS[scenario], directory, steps=4)
    for rule, copies in COPIES.items():
        directory = os.path.join(RULES_DIR, rule + ".tests")
        os.makedirs(directory, exist_ok=True)
        for name, source in copies.items():
            shutil.copyfile(os.path.join(SCENARIOS_DIR, source), os.path.join(directory, name + ".json.gz"))


if __name__ == "__main__":
    main()
