# source: https://github.com/mindsdb/lightwood/pull/380
# lightwood's NnMixer._iter_fit(): the forward pass and the loss run under LightwoodAutocast, the
# library's own context manager "equivalent to torch.cuda.amp.autocast" (it turns fp16 autocast on
# with torch.set_autocast_enabled when a CUDA GPU with tensor cores is present), then
# `loss.backward()` and `self.optimizer.step()` with no GradScaler: "sometimes gradients would
# underflow, resulting in NaNs being propagated" (the PR adds torch.cuda.amp.GradScaler).
import json

import torch
import torch.nn as nn


def get_devices():
    if torch.cuda.is_available():
        return torch.device("cuda"), torch.cuda.device_count()
    return torch.device("cpu"), 0


class LightwoodAutocast:
    """Like torch.cuda.amp.autocast, but only on a GPU with tensor cores."""

    def __init__(self, enabled=True):
        self.major = 0
        if not enabled or not torch.cuda.is_available():
            self._enabled = False
        else:
            device, _ = get_devices()
            if device.type == "cuda":
                self.major, _ = torch.cuda.get_device_capability(device)
                self._enabled = enabled if self.major > 6 else False
            else:
                self._enabled = False
        self.prev = self._enabled

    def __enter__(self):
        if self._enabled:
            self.prev = torch.is_autocast_enabled("cuda")
            torch.set_autocast_enabled("cuda", self._enabled)
            torch.autocast_increment_nesting()

    def __exit__(self, *args):
        if self._enabled:
            if torch.autocast_decrement_nesting() == 0:
                torch.clear_autocast_cache()
            torch.set_autocast_enabled("cuda", self.prev)
        return False


class DefaultNet(nn.Module):
    def __init__(self, input_size, output_size):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(input_size, 32), nn.SELU(), nn.Linear(32, output_size))

    def forward(self, x):
        return self.net(x)


class NnMixer:
    def __init__(self):
        self.device, _ = get_devices()
        self.net = None
        self.optimizer = None
        self.criterion = nn.MSELoss()
        self.losses = []

    def fit(self, ds, max_epochs=8):
        inputs, labels = ds
        self.net = DefaultNet(inputs.shape[1], labels.shape[1]).to(self.device)
        self.optimizer = torch.optim.AdamW(self.net.parameters(), lr=0.01)
        for epoch in range(max_epochs):
            self.losses.append(self._iter_fit(ds))

    def _iter_fit(self, ds):
        self.net.train()
        running_loss = 0.0
        X, Y = ds
        for i in range(0, len(X), 32):
            inputs = X[i:i + 32].to(self.device)
            labels = Y[i:i + 32].to(self.device)
            self.optimizer.zero_grad()
            with LightwoodAutocast():  # expect: GL201
                outputs = self.net(inputs)
                loss = self.criterion(outputs.float(), labels)
            loss.backward()
            self.optimizer.step()
            running_loss += loss.item()
        return running_loss / ((len(X) + 31) // 32)


torch.manual_seed(0)
X = torch.randn(256, 6)
Y = torch.stack([X[:, 0] * X[:, 1], X[:, 2:].sum(1)], dim=1)
mixer = NnMixer()
mixer.fit((X, Y))
print("GPULINT-TRAIN " + json.dumps({"first_loss": mixer.losses[0], "last_loss": mixer.losses[-1], "device": mixer.device.type}))
