"""A training loop that profiles itself, for `ptadvise run --capture torch` (run_torch_own_profiler.sh).

    own_profiler.py MODE OUT_PREFIX

MODE schedule: torch.profiler with a schedule from the first step, one export (OUT_PREFIX.json).
MODE legacy: six plain steps, then torch.autograd.profiler.profile around five more (ptadvise's own
recording is under way by then), exported to OUT_PREFIX.json.
MODE repeat: torch.profiler with a repeating schedule, two exports (OUT_PREFIX_1.json.gz, OUT_PREFIX_2.json.gz).
MODE spawn: two processes of torch.multiprocessing.spawn, each profiling itself as in `schedule` from its
first step (before ptadvise would begin recording it), exported to OUT_PREFIX_<i>.json.
Every step runs inside record_function("own_region"), so the program's trace can be told from ptadvise's.
"""
import sys

import torch
import torch.nn as nn

mode, prefix = sys.argv[1], sys.argv[2]
model = nn.Linear(128, 128)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def step():
    with torch.autograd.profiler.record_function("own_region"):
        loss = model(torch.randn(64, 128)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()


def profiled_loop(path):
    from torch.profiler import profile, schedule
    with profile(schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(6):
            step()
            prof.step()


def spawned(index, prefix):
    profiled_loop("%s_%d.json" % (prefix, index))


if mode == "spawn" and __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.spawn(spawned, args=(prefix,), nprocs=2)
if mode == "schedule":
    profiled_loop(prefix + ".json")
elif mode == "legacy":
    for _ in range(6):
        step()
    with torch.autograd.profiler.profile() as prof:
        for _ in range(5):
            step()
    prof.export_chrome_trace(prefix + ".json")
elif mode == "repeat":
    from torch.profiler import profile, schedule
    exports = []

    def ready(p):
        exports.append(prefix + "_%d.json.gz" % (len(exports) + 1))
        p.export_chrome_trace(exports[-1])
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for _ in range(10):
            step()
            prof.step()
if __name__ == "__main__":
    print("trained, profiled by the program itself")
