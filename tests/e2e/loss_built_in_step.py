"""A tiny CPU training loop whose loss builds nn.NLLLoss(weight) in every forward, for the end-to-end test
of `ptadvise run --capture torch`: object-built-in-step (PTA111) must point at the line of forward that
builds it, also on PyTorch builds without Kineto (whose exports have no Python stacks of their own)."""

import torch
from torch import nn


class WeightedLoss(nn.Module):
    def forward(self, logits, target):
        criterion = nn.NLLLoss(weight=torch.full((logits.shape[1],), 0.25))
        return criterion(torch.log_softmax(logits, dim=1), target)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_function = WeightedLoss()
    for _ in range(8):
        features, labels = torch.randn(16, 32), torch.randint(0, 4, (16,))
        optimizer.zero_grad()
        loss = loss_function(model(features), labels)
        loss.backward()
        optimizer.step()
    print("trained 8 steps, last loss %.4f" % loss.item())


if __name__ == "__main__":
    main()
