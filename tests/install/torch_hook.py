#!/usr/bin/python3
"""The torch.profiler hook of share/ptadvise/python with Debian's PyTorch: a CPU training loop with a
worker-less, slow data loader, profiled in two recording cycles with on_trace_ready=ptadvise_hook(...).
Each cycle must write its trace and log ptadvise's report with the data-loader stall (PTA106);
raise_on_failure, extra arguments and a failing check (no rules) behave as documented.

Usage: torch_hook.py PTADVISE PYTHON_DIR E2E_DIR     (exit 77 when torch cannot be imported)
"""
import glob
import os
import sys
import tempfile

ptadvise, python_dir, e2e_dir = sys.argv[1:4]
try:
    import torch
except ImportError:
    print("skipped: this python3 cannot import torch (install python3-torch)")
    sys.exit(77)
sys.path.insert(0, python_dir)
sys.path.insert(0, e2e_dir)
from ptadvise_hook import PtadviseCheckFailed, ptadvise_hook  # noqa: E402
from train_cpu import SlowDataset  # noqa: E402

from outcome import expect, finish  # noqa: E402



def train(hook, cycles=2):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(32, 64), torch.nn.ReLU()]
    for _ in range(16):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=16, num_workers=0)
    loss_function = torch.nn.CrossEntropyLoss()
    plan = torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=cycles)
    steps = 5 * cycles
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=plan,
                                on_trace_ready=hook, record_shapes=True, with_stack=True) as profiler:
        for step, (features, labels) in enumerate(loader):
            if step >= steps:
                break
            optimizer.zero_grad()
            loss_function(model(features), labels).backward()
            optimizer.step()
            profiler.step()


with tempfile.TemporaryDirectory() as scratch:
    os.chdir(scratch)
    # Two cycles: two traces, each checked, the findings in the log.
    lines = []
    train(ptadvise_hook("traces", ptadvise=ptadvise, log=lines.append))
    traces = sorted(glob.glob("traces/*.pt.trace.json"))
    expect(len(traces) == 2, "expected 2 traces, got %s" % traces)
    expect(not glob.glob("traces/*.tmp"), "a temporary trace file was left behind")
    checked = [line for line in lines if line.startswith("ptadvise: checked ")]
    expect(len(checked) == 2 and all(line.endswith("(exit 1)") for line in checked),
           "each trace checked once with findings (exit 1): %s" % checked)
    log = "\n".join(lines)
    expect(log.count("[PTA106]") == 2, "PTA106 not reported once per cycle:\n%s" % log)
    expect("\x1b[" not in log, "colour codes in the training log")

    # Extra check arguments reach ptadvise: --exit-zero makes the check pass.
    lines = []
    train(ptadvise_hook("zero", args=["--exit-zero"], ptadvise=ptadvise, log=lines.append), cycles=1)
    expect([line for line in lines if line.startswith("ptadvise: checked")] ==
           ["ptadvise: checked %s (exit 0)" % glob.glob("zero/*.pt.trace.json")[0]], "--exit-zero: %s" % lines)

    # raise_on_failure stops the training at the first failing check.
    try:
        train(ptadvise_hook("raising", ptadvise=ptadvise, log=lambda line: None, raise_on_failure=True))
        expect(False, "raise_on_failure did not raise")
    except PtadviseCheckFailed as error:
        expect("exited 1" in str(error), "unexpected message: %s" % error)

    # A check that cannot run (no rules) is logged with ptadvise's error, exit 2.
    os.makedirs("no-rules")
    os.environ["PTADVISE_RULES_DIR"] = os.path.abspath("no-rules")
    lines = []
    train(ptadvise_hook("broken", ptadvise=ptadvise, log=lines.append), cycles=1)
    del os.environ["PTADVISE_RULES_DIR"]
    expect(any(line.endswith("(exit 2)") for line in lines) and any("no rules found" in line for line in lines),
           "a failing check was not logged: %s" % lines)

finish("torch.profiler hook: 2 cycles written and checked (PTA106 in the log); --exit-zero, "
       "raise_on_failure and a failing check behave as documented")
