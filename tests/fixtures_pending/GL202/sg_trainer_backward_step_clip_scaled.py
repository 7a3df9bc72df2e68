# source: https://github.com/Deci-AI/super-gradients/pull/653
# sg_trainer: Trainer._backward_step() calls self.scaler.scale(loss).backward() and then, when
# clip_grad_norm is set, clip_grad_norm_ on the network's parameters right away (every batch, on
# the still-scaled gradients), and only every batch_accumulate batches scaler.step/update; the PR
# moves the clip before the step and unscales first.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TrainingParams:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Trainer:
    def __init__(self, net, training_params, device):
        self.device = device
        self.net = net.to(device)
        self.training_params = training_params
        self.batch_accumulate = training_params.batch_accumulate
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=training_params.initial_lr, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()
        mixed = training_params.mixed_precision and device.type == "cuda"
        self.scaler = torch.amp.GradScaler(device.type, enabled=mixed)
        self.losses = []

    def _backward_step(self, loss, epoch, batch_idx):
        # the scaler is enabled only with mixed precision
        self.scaler.scale(loss).backward()
        if self.training_params.clip_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.training_params.clip_grad_norm)  # expect: GL202
        integrated_batches_num = batch_idx + len(self.train_loader) * epoch + 1
        if integrated_batches_num % self.batch_accumulate == 0:
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad()

    def _train_epoch(self, epoch):
        self.net.train()
        for batch_idx, (inputs, targets) in enumerate(self.train_loader):
            inputs, targets = inputs.to(self.device), targets.to(self.device)
            with torch.autocast(self.device.type, enabled=self.training_params.mixed_precision and self.device.type == "cuda"):
                outputs = self.net(inputs)
                loss = self.criterion(outputs, targets)
            self._backward_step(loss, epoch, batch_idx)
            self.losses.append(loss.item())

    def train(self, train_loader, max_epochs):
        self.train_loader = train_loader
        for epoch in range(max_epochs):
            self._train_epoch(epoch)


torch.manual_seed(0)
x = torch.randn(256, 16)
y = (x[:, :4].sum(dim=1) > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
params = TrainingParams(initial_lr=0.05, batch_accumulate=2, clip_grad_norm=1.0, mixed_precision=True)
trainer = Trainer(net, params, device)
trainer.train(loader, max_epochs=4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(trainer.losses[:4]) / 4, "last_loss": sum(trainer.losses[-4:]) / 4, "device": device.type}))
