"""A torch.multiprocessing.spawn DDP job (gloo, 2 ranks, no RANK variable), for run_torch_spawn.sh.

    spawn_job.py PORT SLOW_MS

The parent process only spawns; each rank trains 8 steps, rank 1 sleeping SLOW_MS before each forward.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def main(rank, world, port, slow_ms):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(8):
        if rank == 1:
            time.sleep(slow_ms / 1000.0)
        loss = model(torch.randn(32, 256)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(2, int(sys.argv[1]), float(sys.argv[2])), nprocs=2)
    print("spawned job done")
