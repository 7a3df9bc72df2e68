# source: https://github.com/davidtvs/pytorch-lr-finder/pull/31
# pytorch-lr-finder: PR #31 made `LRFinder` move every batch with `non_blocking=True`
# (`range_test(..., non_blocking_transfer=True)` -> `_train_batch()` -> `_move_to_device()` ->
# its nested `move()` calling `obj.to(device, non_blocking=non_blocking)`). The asynchronous copy only
# overlaps with compute when the batches come from pinned memory; the loader the user hands to
# `range_test` here (the README's example loader) has no `pin_memory=True`, so every copy is
# staged through pageable memory and non_blocking buys nothing. `_train_batch` also accumulates
# gradients over `accumulation_steps` batches and sums their losses (`total_loss += loss`, each one
# backpropagated, returned as `.item()`): GL401/GL402 must stay silent on that.
import json

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import LRScheduler
from torch.utils.data import DataLoader, TensorDataset


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
        self.end_lr = end_lr
        self.num_iter = num_iter
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        r = self.last_epoch / (self.num_iter - 1)
        return [base_lr * (self.end_lr / base_lr) ** r for base_lr in self.base_lrs]


class TrainDataLoaderIter:
    def __init__(self, data_loader):
        self.data_loader = data_loader
        self._iterator = iter(data_loader)

    def __next__(self):
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = iter(self.data_loader)
            return next(self._iterator)


class LRFinder:
    def __init__(self, model, optimizer, criterion, device=None):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.device = device
        self.history = {"lr": [], "loss": []}

    def range_test(self, train_loader, end_lr=10, num_iter=100, smooth_f=0.05, diverge_th=5,
                   accumulation_steps=1, non_blocking_transfer=True):
        self.history = {"lr": [], "loss": []}
        self.best_loss = None
        self.model.to(self.device)
        lr_schedule = ExponentialLR(self.optimizer, end_lr, num_iter)
        train_iter = TrainDataLoaderIter(train_loader)
        for iteration in range(num_iter):
            loss = self._train_batch(train_iter, accumulation_steps, non_blocking_transfer=non_blocking_transfer)
            self.history["lr"].append(lr_schedule.get_last_lr()[0])
            lr_schedule.step()
            if iteration == 0:
                self.best_loss = loss
            else:
                if smooth_f > 0:
                    loss = smooth_f * loss + (1 - smooth_f) * self.history["loss"][-1]
                if loss < self.best_loss:
                    self.best_loss = loss
            self.history["loss"].append(loss)
            if loss > diverge_th * self.best_loss:
                break

    def _train_batch(self, train_iter, accumulation_steps, non_blocking_transfer=True):
        self.model.train()
        total_loss = None
        self.optimizer.zero_grad()
        for i in range(accumulation_steps):
            inputs, labels = next(train_iter)
            inputs, labels = self._move_to_device(inputs, labels, non_blocking=non_blocking_transfer)
            outputs = self.model(inputs)
            loss = self.criterion(outputs, labels)
            loss /= accumulation_steps
            loss.backward()
            if total_loss is None:
                total_loss = loss
            else:
                total_loss += loss
        self.optimizer.step()
        return total_loss.item()

    def _move_to_device(self, inputs, labels, non_blocking=True):
        def move(obj, device, non_blocking=True):
            if hasattr(obj, "to"):
                return obj.to(device, non_blocking=non_blocking)  # expect: GL503
            elif isinstance(obj, (tuple, list)):
                return type(obj)(move(o, device, non_blocking) for o in obj)
            return obj

        inputs = move(inputs, self.device, non_blocking=non_blocking)
        labels = move(labels, self.device, non_blocking=non_blocking)
        return inputs, labels


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(512, 20)
    y = (x[:, :5].sum(dim=1) > 0).long()
    dataloader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, num_workers=2,
                            generator=torch.Generator().manual_seed(0))
    net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
    optimizer = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
    lr_finder = LRFinder(net, optimizer, nn.CrossEntropyLoss(), device=device)
    lr_finder.range_test(dataloader, end_lr=1.0, num_iter=60, accumulation_steps=2)
    losses = lr_finder.history["loss"]
    return losses, device


if __name__ == "__main__":
    losses, device = main()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": min(losses), "device": device.type}))
