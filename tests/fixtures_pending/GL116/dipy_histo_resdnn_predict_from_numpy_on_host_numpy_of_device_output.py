# source: https://github.com/dipy/dipy/pull/3869 (closes dipy/dipy#3862)
# DIPY's HistoResDNN (dipy/nn/torch/histo_resdnn.py) is a plain wrapper class: `use_cuda=True` picks
# `self.device = torch.device("cuda")` when available and moves its float64 DenseModel there, but the
# private `__predict(x_test)` that `predict()` calls per chunk of voxels runs
# `self.model(torch.from_numpy(x_test)).detach().numpy()`: the chunk is made on the host and meets
# the model on the GPU, and the output would reach `.numpy()` still on the GPU (the issue's "can't
# convert cuda:0 device type tensor to numpy"; DeepN4 had the second half alone). Here the wrapper's
# residual MLP is first fitted to synthetic SH coefficients on its device, then predicts a volume
# chunk by chunk as `predict()` does.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn


class DenseModel(nn.Module):
    def __init__(self, sh_size, num_hidden):
        super().__init__()
        self.fc1 = nn.Linear(sh_size, 64)
        self.fc2 = nn.Linear(64, num_hidden)
        self.fc3 = nn.Linear(num_hidden, 32)
        self.fc4 = nn.Linear(32, num_hidden)
        self.fc5 = nn.Linear(num_hidden, 32)
        self.fc6 = nn.Linear(32, num_hidden)

    def forward(self, x):
        x2 = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        x4 = self.fc4(torch.relu(self.fc3(x2)))
        return self.fc6(torch.relu(self.fc5(x2 + x4)))


class HistoResDNN:
    def __init__(self, *, sh_order_max=4, use_cuda=False):
        self.sh_order_max = sh_order_max
        self.sh_size = (sh_order_max + 1) * (sh_order_max + 2) // 2
        self.model = DenseModel(self.sh_size, self.sh_size).type(torch.float64)
        if use_cuda and torch.cuda.is_available():
            self.device = torch.device("cuda")
        else:
            self.device = torch.device("cpu")
        self.model = self.model.to(self.device)

    def __predict(self, x_test):
        if x_test.shape[-1] != self.sh_size:
            raise ValueError("Expected input for the provided model weights do not match the declared model")
        return self.model(torch.from_numpy(x_test)).detach().numpy()  # expect: GL116, GL109

    def predict(self, dw_sh_coef, *, mask=None, chunk_size=64):
        if mask is None:
            mask = np.abs(dw_sh_coef).sum(axis=-1) > 0
        flat = dw_sh_coef[mask]
        pred = np.zeros_like(flat)
        for start in range(0, len(flat), chunk_size):
            pred[start:start + chunk_size] = self.__predict(flat[start:start + chunk_size])
        out = np.zeros(dw_sh_coef.shape)
        out[mask] = pred
        return out


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    hist = HistoResDNN(use_cuda=True)
    n = hist.sh_size
    mixing = rng.normal(size=(n, n)) / np.sqrt(n)
    signal = rng.normal(size=(512, n))
    fodf = np.tanh(signal @ mixing)

    optimizer = torch.optim.Adam(hist.model.parameters(), lr=1e-2)
    x_all = torch.from_numpy(signal).to(hist.device)
    y_all = torch.from_numpy(fodf).to(hist.device)
    first_loss = last_loss = None
    for step in range(60):
        idx = torch.from_numpy(rng.choice(len(signal), 64, replace=False)).to(hist.device)
        loss = ((hist.model(x_all[idx]) - y_all[idx]) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if first_loss is None:
            first_loss = loss.item()
        last_loss = loss.item()

    hist.model.eval()
    volume = rng.normal(size=(6, 6, 4, n))
    pred = hist.predict(volume)
    print(f"predicted volume {pred.shape}, mean |sh| {np.abs(pred).mean():.3f}")
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first_loss, "last_loss": last_loss, "device": hist.device.type}))


if __name__ == "__main__":
    main()
