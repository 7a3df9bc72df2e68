# source: https://github.com/amjltc295/pytorch-golden-template/pull/66
# pytorch-golden-template: a WorkerTemplate base class runs `_iter_data()` over its loader and calls
# the subclass's `_run_and_optimize_model(data)` for each batch. The Trainer's version backpropagates
# and steps; the Tester's version (model put in eval mode by `_setup_model()`) only runs the model
# and the loss, but without torch.no_grad(), so every test batch records an autograd graph. The PR
# ("Fix testing mode not using no_grad()") wraps the Tester's forward in `with torch.no_grad():`.
# (Tiny classifier, synthetic data, the template's worker/trainer/tester split kept.)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3))

    def forward(self, x):
        return self.net(x)


class WorkerTemplate:
    def __init__(self, model, data_loader, loss_fn, device):
        self.model = model
        self.data_loader = data_loader
        self.loss_fn = loss_fn
        self.device = device

    def _setup_model(self):
        raise NotImplementedError

    def _run_and_optimize_model(self, data):
        raise NotImplementedError

    def _iter_data(self, epoch):
        self._setup_model()
        losses = []
        for data in self.data_loader:
            data = [d.to(self.device) for d in data]
            loss, _ = self._run_and_optimize_model(data)
            losses.append(loss.item())
        return losses


class Trainer(WorkerTemplate):
    def __init__(self, model, data_loader, loss_fn, device, optimizer):
        super().__init__(model, data_loader, loss_fn, device)
        self.optimizer = optimizer

    def _setup_model(self):
        self.model.train()

    def _run_and_optimize_model(self, data):
        self.optimizer.zero_grad()
        data_input, target = data
        model_output = self.model(data_input)
        loss = self.loss_fn(model_output, target)
        loss.backward()
        self.optimizer.step()
        return loss, model_output


class Tester(WorkerTemplate):
    def _setup_model(self):
        self.model.eval()

    def _run_and_optimize_model(self, data):
        data_input, target = data
        model_output = self.model(data_input)  # expect: GL403
        loss = self.loss_fn(model_output, target)
        return loss, model_output


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X = torch.randn(384, 12)
    y = (X[:, :3].argmax(dim=1)).long()
    train_loader = DataLoader(TensorDataset(X[:320], y[:320]), batch_size=32, shuffle=True)
    test_loader = DataLoader(TensorDataset(X[320:], y[320:]), batch_size=32)
    model = Classifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    trainer = Trainer(model, train_loader, loss_fn, device, optimizer)
    tester = Tester(model, test_loader, loss_fn, device)
    history = []
    for epoch in range(4):
        history.extend(trainer._iter_data(epoch))
        test_losses = tester._iter_data(epoch)
        print(f"epoch {epoch}: test loss {sum(test_losses) / len(test_losses):.4f}")
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
