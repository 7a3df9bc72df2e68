# source: https://github.com/rwth-i6/returnn/issues/1590
# A training engine with automatic mixed precision: the engine scales the loss with its GradScaler
# and calls backward, then hands the scaler to the updater's step(), which clips the gradients to a
# global norm and only then steps through the scaler. The clipping sees the scaled gradients (the
# scale is about 65k at the start), so the configured norm is effectively divided by the scale. The
# fix unscales the gradients before the clip.
import json

import torch
import torch.nn as nn


class Updater:
    def __init__(self, network, lr=0.01, grad_clip_global_norm=1.0):
        self.network = network
        self.optimizer = torch.optim.SGD(network.parameters(), lr=lr, momentum=0.9)
        self._grad_clip_global_norm = grad_clip_global_norm

    def step(self, *, grad_scaler=None):
        if self._grad_clip_global_norm:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), self._grad_clip_global_norm)  # expect: GL202
        if grad_scaler is not None:
            grad_scaler.step(self.optimizer)
            grad_scaler.update()
        else:
            self.optimizer.step()


class Engine:
    def __init__(self, model, device, use_amp=True):
        self.model = model
        self.device = device
        self._updater = Updater(model)
        self._grad_scaler = torch.amp.GradScaler(device.type) if use_amp else None
        self._autocast_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
        self.losses = []

    def train_epoch(self, batches):
        self.model.train()
        for x, y in batches:
            x, y = x.to(self.device), y.to(self.device)
            self._updater.optimizer.zero_grad()
            with torch.autocast(self.device.type, dtype=self._autocast_dtype):
                total_loss = nn.functional.mse_loss(self.model(x).float(), y)
            if self._grad_scaler is not None:
                self._grad_scaler.scale(total_loss).backward()
            else:
                total_loss.backward()
            self._updater.step(grad_scaler=self._grad_scaler)
            self.losses.append(total_loss.item())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X = torch.randn(256, 8)
    Y = X[:, :3].sum(dim=1, keepdim=True)
    batches = [(X[i : i + 32], Y[i : i + 32]) for i in range(0, 256, 32)]
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    engine = Engine(model, device)
    for epoch in range(8):
        engine.train_epoch(batches)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": engine.losses[0], "last_loss": engine.losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
