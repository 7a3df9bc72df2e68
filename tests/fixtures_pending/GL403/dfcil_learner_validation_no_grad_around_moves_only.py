# source: https://github.com/GT-RIPL/AlwaysBeDreaming-DFCIL/issues/9
# learners/default.py: the continual-learning learner NormalNN(nn.Module) keeps the backbone in
# `self.model`, overrides cuda() to move it, and its validation(dataloader, model=None, ...) sets
# `model.eval()` and wraps only the batch moves in `with torch.no_grad():`; the forward pass
# `model.forward(input)[:, :self.valid_out_dim]` runs with autograd on (the reporter: it "will
# take too much memory"). learn_batch() calls validation() before training and after each epoch.
import json

import torch
import torch.nn as nn


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += float(val) * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def accuracy(output, target):
    return (output.argmax(dim=1) == target).float().mean().item()


class MLP(nn.Module):
    def __init__(self, out_dim=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU())
        self.last = nn.Linear(32, out_dim)

    def forward(self, x):
        return self.last(self.body(x))


class NormalNN(nn.Module):
    def __init__(self, learner_config):
        super().__init__()
        self.log = print
        self.config = learner_config
        self.out_dim = learner_config["out_dim"]
        self.model = MLP(out_dim=self.out_dim)
        self.criterion_fn = nn.CrossEntropyLoss(reduction="none")
        if learner_config["gpuid"][0] >= 0:
            self.cuda()
            self.gpu = True
        else:
            self.gpu = False
        self.valid_out_dim = self.out_dim
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=learner_config["lr"], momentum=0.9)
        self.scheduler = torch.optim.lr_scheduler.MultiStepLR(self.optimizer, milestones=[100], gamma=0.1)
        self.epoch_losses = []

    def learn_batch(self, train_loader, val_loader=None):
        if val_loader is not None:
            self.validation(val_loader)
        for epoch in range(self.config["schedule"][-1]):
            if epoch > 0:
                self.scheduler.step()
            losses = AverageMeter()
            for i, (x, y, task) in enumerate(train_loader):
                self.model.train()
                if self.gpu:
                    x = x.cuda()
                    y = y.cuda()
                loss, output = self.update_model(x, y)
                losses.update(loss, y.size(0))
            self.epoch_losses.append(losses.avg)
            if val_loader is not None:
                self.validation(val_loader)
        self.model.eval()

    def criterion(self, logits, targets):
        return self.criterion_fn(logits, targets.long()).mean()

    def update_model(self, inputs, targets):
        logits = self.forward(inputs)
        total_loss = self.criterion(logits, targets)
        self.optimizer.zero_grad()
        total_loss.backward()
        self.optimizer.step()
        return total_loss.detach(), logits

    def validation(self, dataloader, model=None, task_in=None, verbal=True):
        if model is None:
            model = self.model
        acc = AverageMeter()
        orig_mode = model.training
        model.eval()
        for i, (input, target, task) in enumerate(dataloader):
            if self.gpu:
                with torch.no_grad():
                    input = input.cuda()
                    target = target.cuda()
            output = model.forward(input)[:, :self.valid_out_dim]  # expect: GL403
            acc.update(accuracy(output, target), len(target))
        model.train(orig_mode)
        if verbal:
            self.log(" * Val Acc {acc.avg:.3f}".format(acc=acc))
        return acc.avg

    def forward(self, x):
        return self.model.forward(x)[:, :self.valid_out_dim]

    def cuda(self):
        self.model = self.model.cuda()
        self.criterion_fn = self.criterion_fn.cuda()
        return self


def make_loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    task = torch.zeros(n, dtype=torch.long)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y, task), batch_size=32, shuffle=True)


torch.manual_seed(0)
config = {"out_dim": 4, "gpuid": [0] if torch.cuda.is_available() else [-1], "lr": 0.05, "schedule": [6]}
learner = NormalNN(config)
learner.learn_batch(make_loader(256, 1), make_loader(64, 2))
device = next(learner.model.parameters()).device
print("GPULINT-TRAIN " + json.dumps({"first_loss": learner.epoch_losses[0], "last_loss": learner.epoch_losses[-1], "device": device.type}))
