# source: https://github.com/catalyst-team/catalyst/issues/1319
# Catalyst 21.09's OptimizerCallback.on_batch_end(runner): the callback asks the runner's engine to
# backward the loss (AMPEngine: `self.scaler.scale(loss).backward()`), then calls its
# `self.grad_clip_fn` (a functools.partial of clip_grad_norm_ built in __init__) on the model's
# parameters, and only then asks the engine for the optimizer step (`scaler.step`, `scaler.update`)
# under the accumulation condition. The gradients are clipped while still multiplied by the loss
# scale ("Gradients need to be unscaled before clipping").
# (A minimal runner that calls its callbacks after each batch; the engine's scaler and autocast
# are enabled on CUDA only; a small classifier on synthetic data.)
import json
from functools import partial

import torch
import torch.nn as nn


class DeviceEngine:
    def __init__(self, device):
        self.device = torch.device(device)

    def sync_device(self, tensor):
        return tensor.to(self.device)

    def autocast(self):
        return torch.autocast(self.device.type, enabled=False)

    def backward_loss(self, loss, model, optimizer):
        loss.backward()

    def optimizer_step(self, loss, model, optimizer):
        optimizer.step()

    def zero_grad(self, loss, model, optimizer):
        model.zero_grad()


class AMPEngine(DeviceEngine):
    def __init__(self, device):
        super().__init__(device)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.device.type == "cuda")

    def autocast(self):
        return torch.autocast(self.device.type, enabled=self.device.type == "cuda")

    def backward_loss(self, loss, model, optimizer):
        self.scaler.scale(loss).backward()

    def optimizer_step(self, loss, model, optimizer):
        self.scaler.step(optimizer)
        self.scaler.update()


class OptimizerCallback:
    def __init__(self, metric_key, model, optimizer, accumulation_steps=1, grad_clip_fn=None, grad_clip_params=None):
        self.metric_key = metric_key
        self.model = model
        self.optimizer = optimizer
        self.accumulation_steps = accumulation_steps
        self._accumulation_counter = 0
        self.grad_clip_fn = partial(grad_clip_fn, **(grad_clip_params or {})) if grad_clip_fn is not None else None

    def on_batch_end(self, runner):
        if runner.is_train_loader:
            self._accumulation_counter += 1
            need_gradient_step = self._accumulation_counter % self.accumulation_steps == 0

            loss = runner.batch_metrics[self.metric_key]
            runner.engine.backward_loss(loss, self.model, self.optimizer)

            if self.grad_clip_fn is not None:
                self.grad_clip_fn(self.model.parameters())  # expect: GL202

            if need_gradient_step:
                runner.engine.optimizer_step(loss, self.model, self.optimizer)
                runner.engine.zero_grad(loss, self.model, self.optimizer)


class SupervisedRunner:
    def __init__(self, engine):
        self.engine = engine
        self.batch_metrics = {}
        self.is_train_loader = True
        self.losses = []

    def handle_batch(self, model, criterion, batch):
        features, targets = (self.engine.sync_device(t) for t in batch)
        with self.engine.autocast():
            logits = model(features)
            loss = criterion(logits, targets)
        self.batch_metrics = {"loss": loss}
        self.losses.append(loss.item())

    def train(self, model, criterion, loaders, num_epochs, callbacks):
        model.to(self.engine.device)
        for epoch in range(num_epochs):
            for loader_key, loader in loaders.items():
                self.is_train_loader = loader_key.startswith("train")
                model.train(self.is_train_loader)
                for batch in loader:
                    self.handle_batch(model, criterion, batch)
                    for callback in callbacks:
                        callback.on_batch_end(self)
        return self.losses


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(256, 10)
    y = (x[:, :3].sum(dim=1) > 0).long()
    loaders = {"train": torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)}
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    callback = OptimizerCallback("loss", model, optimizer, accumulation_steps=1,
                                 grad_clip_fn=nn.utils.clip_grad_norm_, grad_clip_params={"max_norm": 1.0})
    runner = SupervisedRunner(engine=AMPEngine(device))
    losses = runner.train(model, criterion, loaders, num_epochs=5, callbacks=[callback])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": torch.device(device).type}))


if __name__ == "__main__":
    main()
