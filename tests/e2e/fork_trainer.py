"""The main process trains, then forks a second trainer while its own window records (run_torch_spawn.sh):
the copy inherits a profiler PyTorch considers enabled, cannot record, and must still run to its end."""
import multiprocessing

import torch
import torch.nn as nn

model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train(n):
    for _ in range(n):
        loss = model(torch.randn(32, 64)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()


train(3)
child = multiprocessing.get_context("fork").Process(target=train, args=(10,))
child.start()
child.join()
train(5)
print("fork trainer exit", child.exitcode)
