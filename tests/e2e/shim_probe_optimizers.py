"""Drives the Python shim in log mode through a loop with two optimizers per batch (a GAN's discriminator
and generator), then with a third optimizer alive that never steps; run by shim_ranges.sh, which counts
the steps the shim ended."""

import torch

discriminator, generator = torch.nn.Linear(4, 1), torch.nn.Linear(4, 4)
optimizer_d = torch.optim.Adam(discriminator.parameters())
optimizer_g = torch.optim.Adam(generator.parameters())


def batches(count):
    for _ in range(count):
        real = torch.randn(2, 4)
        optimizer_d.zero_grad()
        discriminator(real).sum().backward()
        optimizer_d.step()
        optimizer_g.zero_grad()
        discriminator(generator(real)).sum().backward()
        optimizer_g.step()


batches(3)  # three steps: each ends once both optimizers have stepped
print("after two optimizers", flush=True)
idle = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)  # alive, never steps
batches(4)  # the discriminator stepping again ends a step: 3 more (the fourth batch's is still open)
print("probe done")
