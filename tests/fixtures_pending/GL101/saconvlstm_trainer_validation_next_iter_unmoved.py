# source: https://github.com/tsugumi-sys/SA-ConvLSTM-Pytorch/pull/26
# After PR #25 the Trainer moves its model to DEVICE in __init__ and every training batch in
# train(), but validation() takes one batch with `next(iter(self.valid_dataloader))` and calls the
# model on it unmoved ("Expected all tensors to be on the same device, but found at least two
# devices, cpu and cuda:0!"). PR #26 adds `input, target = input.to(DEVICE), target.to(DEVICE)`.
# fails-on-cuda: Expected all tensors to be on the same device
import json
from typing import Callable, Dict, Tuple

import torch
from torch import nn
from torch.nn.modules.loss import _Loss
from torch.optim import Optimizer
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class EarlyStopping:
    def __init__(self, patience=5):
        self.patience = patience
        self.best = None
        self.counter = 0
        self.early_stop = False

    def __call__(self, valid_loss, model):
        if self.best is None or valid_loss < self.best:
            self.best = valid_loss
            self.counter = 0
        else:
            self.counter += 1
            self.early_stop = self.counter >= self.patience


class FrameModel(nn.Module):
    def __init__(self, frames=4, size=8):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(frames * size * size, 32), nn.ReLU(), nn.Linear(32, size * size))

    def forward(self, x):
        return torch.sigmoid(self.net(x)).view(x.size(0), 1, 8, 8)


class Trainer:
    def __init__(
        self,
        model: nn.Module,
        train_epochs: int,
        train_dataloader: DataLoader,
        valid_dataloader: DataLoader,
        loss_criterion: _Loss,
        accuracy_criterion: Callable,
        optimizer: Optimizer,
        early_stopping: EarlyStopping,
    ) -> None:
        self.model = model.to(DEVICE)
        self.train_epochs = train_epochs
        self.train_dataloader = train_dataloader
        self.valid_dataloader = valid_dataloader
        self.loss_criterion = loss_criterion
        self.accuracy_criterion = accuracy_criterion
        self.optimizer = optimizer
        self.early_stopping = early_stopping

    def train(self) -> Dict:
        results = {"train_loss": [], "validation_loss": [], "accuracy": []}
        for epoch in range(1, self.train_epochs + 1):
            train_loss = 0
            self.model.train()
            for _, (input, target) in enumerate(self.train_dataloader, start=1):
                input, target = input.to(DEVICE), target.to(DEVICE)
                output = self.model(input)
                loss = self.loss_criterion(output.flatten(), target.flatten())
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                train_loss += loss.item()
            train_loss /= len(self.train_dataloader)
            valid_loss, valid_acc = self.validation()
            results["train_loss"].append(train_loss)
            results["validation_loss"].append(valid_loss)
            results["accuracy"].append(valid_acc)
            self.early_stopping(valid_loss, self.model)
            if self.early_stopping.early_stop is True:
                print(f"Early stopped at epoch {epoch}")
                break
        return results

    def validation(self) -> Tuple[float, float]:
        self.model.eval()
        with torch.no_grad():
            input, target = next(iter(self.valid_dataloader))
            output = self.model(input)  # expect: GL101
            loss = self.loss_criterion(output.flatten(), target.flatten())  # expect: GL101
            acc = self.accuracy_criterion(output.flatten(), target.flatten())
        return loss.item(), acc.item()


def accuracy(pred, target):
    return ((pred > 0.5) == (target > 0.5)).float().mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    frames = torch.rand(96, 4, 8, 8)
    targets = (frames.mean(dim=1, keepdim=True) > 0.5).float()
    train_dataloader = DataLoader(TensorDataset(frames[:64], targets[:64]), batch_size=16, shuffle=True)
    valid_dataloader = DataLoader(TensorDataset(frames[64:], targets[64:]), batch_size=16)
    model = FrameModel()
    trainer = Trainer(
        model=model,
        train_epochs=15,
        train_dataloader=train_dataloader,
        valid_dataloader=valid_dataloader,
        loss_criterion=nn.BCELoss(),
        accuracy_criterion=accuracy,
        optimizer=torch.optim.Adam(model.parameters(), lr=0.01),
        early_stopping=EarlyStopping(patience=10),
    )
    results = trainer.train()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": results["train_loss"][0], "last_loss": results["train_loss"][-1], "device": DEVICE}))
