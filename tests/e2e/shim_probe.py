"""Drives the Python shim in log mode (PTADVISE_SHIM_LOG) through three optimizer steps; run by
shim_ranges.sh, which compares the logged ranges with what the shim must push."""

import sys

import torch
from torch.utils.data import DataLoader

import ptadvise_shim

# The sitecustomize the shim shadows still ran.
assert getattr(sys, "shadowed_sitecustomize_ran", False), "the shadowed sitecustomize did not run"

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(torch.arange(12.0).reshape(3, 4), batch_size=1)
for batch in loader:
    optimizer.zero_grad()
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
    value = loss.item()  # a CPU tensor: no host wait, so no range

name, line = ptadvise_shim.sync_range_name("item", sys._getframe()), sys._getframe().f_lineno
assert name == "ptadvise.sync item shim_probe.py:%d" % line, name
assert torch.tensor([1.5, 2.5]).tolist() == [1.5, 2.5]
assert torch.tensor(3.0).cpu().item() == 3.0
print("probe done")
