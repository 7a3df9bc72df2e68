# source: https://github.com/visionml/pytracking/pull/313
# pytracking (ltr/trainers/ltr_trainer.py): `LTRTrainer(BaseTrainer)` runs `cycle_dataset()` for each
# loader of the epoch; the actor returns `(loss, stats)` and `_update_stats()` feeds every stat into an
# `AverageMeter` kept in `self.stats[loader.name]`. The actor here reports the loss tensors themselves,
# so `AverageMeter.update()` adds tensors that carry the autograd graph into `self.sum`: every graph of
# the epoch stays alive until `new_epoch()` (the PR: "the gradient graph will be accumulated during
# training and won't be released"). The fix turns tensor stats into numbers before updating the meter.
# (A small two-head regression net and two synthetic loaders; fixed seed.)
import json
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class AverageMeter:
    """Computes and stores the average and current value"""

    def __init__(self):
        self.reset()
        self.clear()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def clear(self):
        self.history = []

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def new_epoch(self):
        if self.count > 0:
            self.history.append(float(self.avg))
            self.reset()


class LTRLoader(DataLoader):
    def __init__(self, name, dataset, training=True, batch_size=1, shuffle=False, epoch_interval=1):
        super().__init__(dataset, batch_size=batch_size, shuffle=shuffle)
        self.name = name
        self.training = training
        self.epoch_interval = epoch_interval


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Linear(6, 32), nn.ReLU())
        self.bb_regressor = nn.Linear(32, 1)
        self.classifier = nn.Linear(32, 1)

    def forward(self, x):
        feat = self.feature_extractor(x)
        return self.bb_regressor(feat), self.classifier(feat)


class DiMPActor:
    def __init__(self, net, objective):
        self.net = net
        self.objective = objective

    def train(self, mode=True):
        self.net.train(mode)

    def __call__(self, data):
        x, iou_gt, score_gt = data
        iou_pred, score_pred = self.net(x)
        loss_iou = self.objective["iou"](iou_pred, iou_gt)
        loss_target = self.objective["test_clf"](score_pred, score_gt)
        loss = loss_iou + loss_target
        stats = {"Loss/total": loss, "Loss/iou": loss_iou, "Loss/target_clf": loss_target}
        return loss, stats


class BaseTrainer:
    def __init__(self, actor, loaders, optimizer, settings, lr_scheduler=None):
        self.actor = actor
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.loaders = loaders
        self.settings = settings
        self.epoch = 0
        self.device = getattr(settings, "device", None)
        if self.device is None:
            self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        self.actor.net.to(self.device)

    def train(self, max_epochs):
        for epoch in range(self.epoch + 1, max_epochs + 1):
            self.epoch = epoch
            self.train_epoch()
            if self.lr_scheduler is not None:
                self.lr_scheduler.step()

    def train_epoch(self):
        raise NotImplementedError


class LTRTrainer(BaseTrainer):
    def __init__(self, actor, loaders, optimizer, settings, lr_scheduler=None):
        super().__init__(actor, loaders, optimizer, settings, lr_scheduler)
        self.stats = OrderedDict({loader.name: None for loader in self.loaders})
        self.step_losses = []

    def cycle_dataset(self, loader):
        """Do a cycle of training or validation."""
        self.actor.train(loader.training)
        torch.set_grad_enabled(loader.training)

        for i, data in enumerate(loader, 1):
            data = tuple(t.to(self.device) for t in data)

            loss, stats = self.actor(data)

            if loader.training:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.step_losses.append(loss.item())

            self._update_stats(stats, loader.batch_size, loader)
        torch.set_grad_enabled(True)

    def train_epoch(self):
        """Do one epoch for each loader."""
        for loader in self.loaders:
            if self.epoch % loader.epoch_interval == 0:
                self.cycle_dataset(loader)
        self._stats_new_epoch()

    def _update_stats(self, new_stats: OrderedDict, batch_size, loader):
        if loader.name not in self.stats.keys() or self.stats[loader.name] is None:
            self.stats[loader.name] = OrderedDict({name: AverageMeter() for name in new_stats.keys()})

        for name, val in new_stats.items():
            if name not in self.stats[loader.name].keys():
                self.stats[loader.name][name] = AverageMeter()
            self.stats[loader.name][name].update(val, batch_size)  # expect: GL402

    def _stats_new_epoch(self):
        for loader_stats in self.stats.values():
            if loader_stats is None:
                continue
            for stat_value in loader_stats.values():
                stat_value.new_epoch()


class Settings:
    pass


def main():
    torch.manual_seed(0)
    x = torch.randn(320, 6)
    iou = torch.sigmoid(x @ torch.randn(6, 1))
    score = (x[:, :1] > 0).float()
    loader_train = LTRLoader("train", TensorDataset(x[:256], iou[:256], score[:256]), training=True,
                             batch_size=32, shuffle=True)
    loader_val = LTRLoader("val", TensorDataset(x[256:], iou[256:], score[256:]), training=False,
                           batch_size=32, epoch_interval=2)
    net = Net()
    objective = {"iou": nn.MSELoss(), "test_clf": nn.BCEWithLogitsLoss()}
    actor = DiMPActor(net=net, objective=objective)
    optimizer = torch.optim.Adam(actor.net.parameters(), lr=1e-2)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    trainer = LTRTrainer(actor, [loader_train, loader_val], optimizer, Settings(), lr_scheduler)
    trainer.train(6)
    print("val loss history:", trainer.stats["val"]["Loss/total"].history)
    losses = trainer.step_losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": trainer.device.type}))


if __name__ == "__main__":
    main()
