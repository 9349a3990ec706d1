"""The training loop of the capture overhead plan: a small CNN whose steps are dominated by kernel
launches (the case where tracing costs most), timed per step with CUDA synchronisation.

    python3 bench/capture_overhead.py [--steps 60] [--warmup 10] [--batch 32] [--device cuda]

Prints one JSON line: {"median_step_ms": ..., "p90_step_ms": ..., "steps": ..., "device": ...}.
Run by bench/capture_overhead.sh with and without `ptadvise run`.
"""

import argparse
import json
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    layers = []
    channels = 3
    for width in (32, 32, 64, 64, 128, 128):
        layers += [torch.nn.Conv2d(channels, width, 3, padding=1), torch.nn.BatchNorm2d(width), torch.nn.ReLU()]
        channels = width
    model = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(channels, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_function = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, 32, 32, device=device)
    labels = torch.randint(0, 10, (args.batch,), device=device)

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for step in range(args.warmup + args.steps):
        synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_function(model(images), labels)
        loss.backward()
        optimizer.step()
        synchronize()
        if step >= args.warmup:
            times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    print(json.dumps({"median_step_ms": statistics.median(times), "p90_step_ms": times[int(0.9 * (len(times) - 1))],
                      "steps": len(times), "device": str(device)}))


if __name__ == "__main__":
    main()
