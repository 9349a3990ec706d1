"""One rank of a small data-parallel training job on CPU (torch.distributed, gloo backend).

Started once per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (as torchrun does), usually
under `ptadvise run --capture torch`, which records the optimizer steps. Options shape the job so that
each job rule has a run that shows its problem and one that does not:

  --slow-rank R --slow-ms MS   rank R does MS ms of extra work before each step's forward (a straggler)
  --slow-kind sleep|compute    what the extra work is: host time outside any op, or extra matmuls
  --batchnorm                  the model has buffers (BatchNorm running stats)
  --no-broadcast-buffers       DistributedDataParallel(broadcast_buffers=False)
  --accumulate N               N micro-batches per optimizer step
  --no-sync                    the first N-1 micro-batches run under ddp.no_sync()
  --hidden H                   width of the layers (communication volume grows with H*H)
  --load-ms MS                 every rank sleeps MS ms per step, as if waiting for its batch: the ranks spend most
                               of the step off the CPU, so four ranks on a two-core machine do not slow each other
  --sample-ms MS               batches come from a DataLoader whose samples each take MS ms to read (I/O: a sleep),
                               in --workers worker processes (default 2)
  --slow-loader-rank R         rank R reads its batches on the training thread (num_workers=0): a per-rank
                               data-loader stall that makes it the job's straggler
"""

import argparse
import contextlib
import time

import torch
import torch.distributed as dist


class SlowSamples(torch.utils.data.Dataset):
    """Samples that take sample_ms each to read, as from a slow disk: the reader sleeps."""

    def __init__(self, count, hidden, sample_ms):
        self.count, self.hidden, self.sample_ms = count, hidden, sample_ms

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        time.sleep(self.sample_ms / 1000.0)
        generator = torch.Generator().manual_seed(index)
        return torch.randn(self.hidden, generator=generator), index % 10


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=0)
    parser.add_argument("--slow-kind", choices=["sleep", "compute"], default="sleep")
    parser.add_argument("--batchnorm", action="store_true")
    parser.add_argument("--no-broadcast-buffers", action="store_true")
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--no-sync", action="store_true")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--load-ms", type=float, default=30)
    parser.add_argument("--sample-ms", type=float, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slow-loader-rank", type=int, default=-1)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    layers = [torch.nn.Linear(args.hidden, args.hidden)]
    if args.batchnorm:
        layers.append(torch.nn.BatchNorm1d(args.hidden))
    layers += [torch.nn.ReLU(), torch.nn.Linear(args.hidden, 10)]
    model = torch.nn.Sequential(*layers)
    ddp = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=not args.no_broadcast_buffers)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(args.batch, args.hidden)
    y = torch.randint(0, 10, (args.batch,))
    extra = torch.randn(256, 256)
    batches = None
    if args.sample_ms > 0:
        workers = 0 if rank == args.slow_loader_rank else args.workers
        dataset = SlowSamples(args.batch * args.steps, args.hidden, args.sample_ms)
        batches = iter(torch.utils.data.DataLoader(dataset, batch_size=args.batch, num_workers=workers))
    for _ in range(args.steps):
        if batches is not None:
            x, y = next(batches)
        time.sleep(args.load_ms / 1000.0)
        if rank == args.slow_rank and args.slow_ms > 0:
            if args.slow_kind == "sleep":
                time.sleep(args.slow_ms / 1000.0)
            else:
                end = time.perf_counter() + args.slow_ms / 1000.0
                while time.perf_counter() < end:
                    extra = torch.tanh(extra @ extra * 0.01)
        optimizer.zero_grad()
        for micro in range(args.accumulate):
            last = micro == args.accumulate - 1
            quiet = ddp.no_sync() if (args.no_sync and not last) else contextlib.nullcontext()
            with quiet:
                loss = torch.nn.functional.cross_entropy(ddp(x), y) / args.accumulate
                loss.backward()
        optimizer.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
