#!/usr/bin/python3
"""Records the CPU-only scenario traces with a real torch.profiler run (Debian's CPU-only PyTorch 1.13, which
exports the legacy format: a bare array of X events without categories, `pid: "CPU functions"`).

Run by hand with the interpreter that has Debian's python3-torch:

    /usr/bin/python3 testdata/scenarios/capture_cpu_only.py

Unlike make_scenarios.py the output is a real measurement and differs from run to run; the tests only rely on
what is structural (which ops run where, the data loader's share of the step).

  cpu_only_num_workers_0.json.gz    DataLoader(num_workers=0): every batch is loaded on the training thread
  cpu_only_detect_anomaly.json.gz   the same loop with torch.autograd.set_detect_anomaly(True) left on
  cpu_only_preloaded.json.gz        the batches made before the loop (no loader in the step, no anomaly mode)

There is no num_workers>0 twin: on a small, shared CPU-only machine the worker processes compete with the
training thread for the same cores and the loop gets slower, not faster, so such a trace would not show a
fix. The preloaded loop is the quiet counterpart instead.
"""

import gzip
import io
import json
import os
import shutil
import sys
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset

HERE = os.path.dirname(os.path.abspath(__file__))


class BlurredImages(Dataset):
    """Synthetic images with a little per-sample augmentation work, as a real image pipeline has."""

    def __len__(self):
        return 100000

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        image = torch.rand(3, 48, 48, generator=generator)
        for _ in range(2):
            image = torch.nn.functional.avg_pool2d(image.unsqueeze(0), 3, 1, 1).squeeze(0)
        return image, index % 10


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 12 * 12, 10))


def record(path, preload, detect_anomaly):
    torch.set_num_threads(1)
    torch.autograd.set_detect_anomaly(detect_anomaly)
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(BlurredImages(), batch_size=32, num_workers=0)
    if preload:
        loader = [batch for _, batch in zip(range(10), loader)]
    with tempfile.TemporaryDirectory() as scratch:
        raw = os.path.join(scratch, "trace.json")
        schedule = torch.profiler.schedule(wait=1, warmup=1, active=6, repeat=1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                    on_trace_ready=lambda p: p.export_chrome_trace(raw)) as profiler:
            for step, (images, labels) in enumerate(loader):
                loss = torch.nn.functional.cross_entropy(net(images), labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                profiler.step()
                if step == 9:
                    break
        with open(raw, "rb") as f:
            data = f.read()
    torch.autograd.set_detect_anomaly(False)
    json.loads(data)  # the export must be complete
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    with open(os.path.join(HERE, path), "wb") as f:
        f.write(buffer.getvalue())
    print("%-34s %7d bytes json, %6d bytes gz" % (path, len(data), len(buffer.getvalue())))


def main():
    print("torch", torch.__version__, file=sys.stderr)
    record("cpu_only_num_workers_0.json.gz", preload=False, detect_anomaly=False)
    record("cpu_only_detect_anomaly.json.gz", preload=False, detect_anomaly=True)
    record("cpu_only_preloaded.json.gz", preload=True, detect_anomaly=False)
    # The anomaly-detection rule must fire on CPU-only traces: these two are its fixtures too.
    fixtures = os.path.join(HERE, "..", "..", "rules.d", "debug-mode", "anomaly-detection-enabled.tests")
    os.makedirs(fixtures, exist_ok=True)
    shutil.copyfile(os.path.join(HERE, "cpu_only_detect_anomaly.json.gz"), os.path.join(fixtures, "fire-cpu-only.json.gz"))
    shutil.copyfile(os.path.join(HERE, "cpu_only_num_workers_0.json.gz"), os.path.join(fixtures, "quiet-cpu-only.json.gz"))


if __name__ == "__main__":
    main()
