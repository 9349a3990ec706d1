"""A tiny CPU training loop with two known mistakes, for the end-to-end test of `ptadvise run`:
a data loader without workers whose samples are slow to produce (PTA106 data-loader-stall), and
autograd anomaly detection left on (PTA112 anomaly-detection-enabled)."""

import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    """Each sample costs 1 ms of "decoding", as an image pipeline on the main process would."""

    def __len__(self):
        return 256

    def __getitem__(self, index):
        time.sleep(0.001)
        generator = torch.Generator().manual_seed(index)
        return torch.randn(32, generator=generator), torch.tensor(index % 4)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    torch.manual_seed(0)
    torch.autograd.set_detect_anomaly(True)
    # Deep enough that anomaly mode's per-node checks cost a measurable share of the step (the noise floor).
    layers = [torch.nn.Linear(32, 64), torch.nn.ReLU()]
    for _ in range(16):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(SlowDataset(), batch_size=16, shuffle=False, num_workers=0)
    loss_function = torch.nn.CrossEntropyLoss()
    for step, (features, labels) in enumerate(loader):
        if step >= steps:
            break
        optimizer.zero_grad()
        loss = loss_function(model(features), labels)
        loss.backward()
        optimizer.step()
    print("trained %d steps, last loss %.4f" % (min(steps, len(loader)), loss.item()))


if __name__ == "__main__":
    main()
