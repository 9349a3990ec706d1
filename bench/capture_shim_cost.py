"""Cost per wrapped call of ptadvise's Python shim (capture/python/ptadvise_shim.py), measured on CPU.

    /usr/bin/python3 bench/capture_shim_cost.py [--repeat N]

Compares each wrapped call with the original in the same process: Tensor.item/.cpu/.tolist on a CPU
tensor (the shim's pass-through path: one Python call and an is_cuda test), a DataLoader batch request
(ranges pushed and popped; without NVTX the push/pop cost is only the shim's Python), and the optimizer
step hook. GPU tensors add one NVTX push/pop (a few hundred ns in NVIDIA's measurements of NVTX with a
tool attached) on top of the sync the call makes anyway.
"""

import argparse
import os
import statistics
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "capture", "python"))
os.environ.setdefault("PTADVISE_CAPTURE_BACKEND", "cupti")

import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

import ptadvise_shim  # noqa: E402


def per_call_ns(statement, number, repeat):
    timings = timeit.repeat(statement, number=number, repeat=repeat)
    return statistics.median(timings) / number * 1e9


def measure(repeat):
    scalar = torch.tensor(1.5)
    vector = torch.arange(8.0)
    dataset = torch.zeros(4096, 4)
    cases = {
        "Tensor.item (CPU)": (lambda: scalar.item(), 200000),
        "Tensor.cpu (CPU)": (lambda: scalar.cpu(), 200000),
        "Tensor.tolist (CPU, 8 values)": (lambda: vector.tolist(), 100000),
    }

    def loader_pass():
        for _ in DataLoader(dataset, batch_size=64):
            pass

    results = {}
    for name, (call, number) in cases.items():
        results[name] = [per_call_ns(call, number, repeat)]
    results["DataLoader batch (64 x 4, 64 batches/pass)"] = [per_call_ns(loader_pass, 20, repeat) / 65]
    ptadvise_shim.patch_torch(torch)  # the same hooks `ptadvise run` installs
    for name, (call, number) in cases.items():
        results[name].append(per_call_ns(call, number, repeat))
    results["DataLoader batch (64 x 4, 64 batches/pass)"].append(per_call_ns(loader_pass, 20, repeat) / 65)
    step_hook = per_call_ns(ptadvise_shim.on_step_end, 100000, repeat)
    return results, step_hook


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    results, step_hook = measure(args.repeat)
    print("torch %s, Python %s, NVTX %s" % (torch.__version__, sys.version.split()[0],
                                           "available" if ptadvise_shim._nvtx is not None else "absent (CPU build)"))
    print("| call | original ns | with shim ns | added ns |")
    print("|---|---:|---:|---:|")
    for name, (before, after) in results.items():
        print("| %s | %.0f | %.0f | %+.0f |" % (name, before, after, after - before))
    print("| optimizer step hook (per step) | - | %.0f | %+.0f |" % (step_hook, step_hook))


if __name__ == "__main__":
    main()
