# source: https://github.com/phamquiluan/ResidualMaskingNetwork/issues/31
# ResidualMaskingNetwork's `trainers/_fer2013_trainer.py`: `FER2013Trainer.__init__` reads
# `self._device = torch.device(self._configs['device'])`, moves the model there and builds the
# class-weighted criterion with `.to(self._device)`, but the epoch methods `_train`, `_val` and
# `_calc_acc_on_private_test` send every batch with bare `images.cuda(non_blocking=True)` /
# `targets.cuda(non_blocking=True)`. With the config's device set to the CPU, as on the
# reporter's Mac, training stops at the first batch with "AssertionError: Torch not compiled with
# CUDA enabled". (FER2013 replaced by synthetic 1x12x12 images of 7 classes; the residual masking
# network by a small CNN whose `fc` the trainer replaces, as it does; the JSON config by a dict
# whose device the driver fills for the machine; tensorboard, plateau scheduler and checkpoints
# left out.)
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def accuracy(output, target):
    return [(output.argmax(1) == target).float().mean() * 100]


class SmallNet(nn.Module):
    def __init__(self, in_channels=1, num_classes=7):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(in_channels, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


class Trainer(object):
    def __init__(self):
        pass


class FER2013Trainer(Trainer):
    def __init__(self, model, train_set, val_set, test_set, configs):
        super().__init__()
        self._configs = configs
        self._lr = self._configs["lr"]
        self._batch_size = self._configs["batch_size"]
        self._device = torch.device(self._configs["device"])
        self._max_epoch_num = self._configs["max_epoch_num"]
        self._train_loader = DataLoader(train_set, batch_size=self._batch_size, shuffle=True)
        self._val_loader = DataLoader(val_set, batch_size=self._batch_size, shuffle=False)
        self._test_loader = DataLoader(test_set, batch_size=self._batch_size, shuffle=False)
        self._model = model(in_channels=configs["in_channels"], num_classes=configs["num_classes"])
        self._model.fc = nn.Linear(64, 7)
        self._model = self._model.to(self._device)
        class_weights = [1.02660468, 9.40661861, 1.00104606, 0.56843877, 0.84912748, 1.29337298, 0.82603942]
        class_weights = torch.FloatTensor(np.array(class_weights))
        self._criterion = nn.CrossEntropyLoss(class_weights).to(self._device)
        self._optimizer = torch.optim.Adam(params=self._model.parameters(), lr=self._lr)
        self._train_loss = []
        self._val_acc = []
        self._current_epoch_num = 0

    def _train(self):
        self._model.train()
        train_loss = 0.0
        for i, (images, targets) in enumerate(self._train_loader):
            images = images.cuda(non_blocking=True)  # expect: GL102
            targets = targets.cuda(non_blocking=True)
            outputs = self._model(images)
            loss = self._criterion(outputs, targets)
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            train_loss += loss.item()
        self._train_loss.append(train_loss / (i + 1))

    def _val(self):
        self._model.eval()
        val_acc = 0.0
        with torch.no_grad():
            for i, (images, targets) in enumerate(self._val_loader):
                images = images.cuda(non_blocking=True)  # expect: GL102
                targets = targets.cuda(non_blocking=True)
                outputs = self._model(images)
                val_acc += accuracy(outputs, targets)[0].item()
        self._val_acc.append(val_acc / (i + 1))

    def _calc_acc_on_private_test(self):
        self._model.eval()
        test_acc = 0.0
        with torch.no_grad():
            for i, (images, targets) in enumerate(self._test_loader):
                images = images.cuda(non_blocking=True)  # expect: GL102
                targets = targets.cuda(non_blocking=True)
                outputs = self._model(images)
                test_acc += accuracy(outputs, targets)[0].item()
        return test_acc / (i + 1)

    def train(self):
        while self._current_epoch_num < self._max_epoch_num:
            self._current_epoch_num += 1
            self._train()
            self._val()
        return self._calc_acc_on_private_test()


def make_set(g, n):
    labels = torch.randint(0, 7, (n,), generator=g)
    images = torch.randn(n, 1, 12, 12, generator=g) * 0.5 + labels.float()[:, None, None, None] / 3
    return TensorDataset(images, labels)


torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
configs = {"lr": 0.01, "batch_size": 32, "in_channels": 1, "num_classes": 7, "max_epoch_num": 6,
           "device": "cuda:0" if torch.cuda.is_available() else "cpu"}
trainer = FER2013Trainer(SmallNet, make_set(g, 224), make_set(g, 64), make_set(g, 64), configs)
test_acc = trainer.train()
print("private test accuracy", test_acc)
print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer._train_loss[0], "last_loss": trainer._train_loss[-1], "device": trainer._device.type}))
