"""GL302: a DistributedSampler whose loader is only iterated by evaluation passes (the `for` over it
runs under `torch.no_grad()`, a `with` block or a decorated function, with no backward and no
optimizer step) needs no set_epoch: each rank evaluates its fixed share of the split whatever the
order (ORNL/HydraGNN#98: `create_dataloaders` builds a DistributedSampler for the train, val and
test splits; only the training one matters). The training loader's sampler keeps the finding, and
an evaluation loop with autograd on does not count as evaluation-only. fixtures27."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def loaders(trainset, valset):
    train_sampler = DistributedSampler(trainset)
    val_sampler = DistributedSampler(valset)
    return DataLoader(trainset, batch_size=8, sampler=train_sampler), DataLoader(valset, batch_size=8, sampler=val_sampler)


def train(loader, model, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


DECORATOR
def validate(loader, model):
    total = 0.0
    for x, y in loader:
        total += nn.functional.mse_loss(model(x), y).item()
    return total


def main():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    train_loader, val_loader = loaders(data, data)
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train(train_loader, model, optimizer)
        validate(val_loader, model)


if __name__ == "__main__":
    main()
'''


def _lines(text):
    return [d.line for d in check(text, {"GL302"}) if d.code == "GL302"]


def test_only_the_training_sampler_is_reported_when_validation_runs_under_no_grad():
    assert _lines(TEXT.replace("DECORATOR", "@torch.no_grad()")) == [9]


def test_validation_with_autograd_on_keeps_its_finding():
    assert _lines(TEXT.replace("DECORATOR\n", "")) == [9, 10]
