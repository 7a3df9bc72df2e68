# source: https://github.com/awslabs/gluonts/pull/1230
# GluonTS, PyTorch predictor (gluonts/torch/model/predictor.py, gluonts/model/forecast_generator.py):
# the forecast generator converts the network's output with `predict_to_numpy`, a
# `functools.singledispatch` function whose `nn.Module` implementation returned
# `prediction_net(*inputs).numpy()`. `PyTorchPredictor` moves the network to its `device` and
# its `batchify` stack function moves every batch there, so on a GPU the output is a CUDA tensor
# and prediction stops with "can't convert cuda:0 device type tensor to numpy". The PR adds
# `.cpu()` before `.numpy()`.
# (A two-layer forecaster over sine windows trained for a few steps stands in for the estimator;
# the predictor, the generator and the dispatching helper keep the library's layout.)
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json
from functools import partial, singledispatch

import numpy as np
import torch
import torch.nn as nn


@singledispatch
def predict_to_numpy(prediction_net, inputs) -> np.ndarray:
    raise NotImplementedError


@predict_to_numpy.register(nn.Module)
def _(prediction_net: nn.Module, inputs) -> np.ndarray:
    return prediction_net(*inputs).numpy()  # expect: GL109


def batchify(data, device):
    return {
        key: torch.tensor(np.stack([entry[key] for entry in data])).to(device)
        for key in data[0]
    }


def inference_data_loader(dataset, batch_size, stack_fn):
    for start in range(0, len(dataset), batch_size):
        yield stack_fn(dataset[start:start + batch_size])


class SampleForecastGenerator:
    def __call__(self, inference_loader, prediction_net, input_names, num_samples=None):
        for batch in inference_loader:
            inputs = [batch[k] for k in input_names]
            outputs = predict_to_numpy(prediction_net, inputs)
            for output in outputs:
                yield {"samples": output, "mean": output.mean(axis=0)}


class PyTorchPredictor:
    def __init__(self, input_names, prediction_net, batch_size, prediction_length,
                 forecast_generator=SampleForecastGenerator(), device=torch.device("cpu")):
        self.input_names = input_names
        self.prediction_net = prediction_net.to(device)
        self.batch_size = batch_size
        self.prediction_length = prediction_length
        self.forecast_generator = forecast_generator
        self.device = device

    def predict(self, dataset, num_samples=None):
        loader = inference_data_loader(dataset, self.batch_size, partial(batchify, device=self.device))
        self.prediction_net.eval()
        with torch.no_grad():
            yield from self.forecast_generator(loader, self.prediction_net, self.input_names, num_samples)


class SimpleFeedForwardNetwork(nn.Module):
    def __init__(self, context_length=16, prediction_length=4, num_samples=5):
        super().__init__()
        self.num_samples = num_samples
        self.prediction_length = prediction_length
        self.mlp = nn.Sequential(nn.Linear(context_length, 32), nn.ReLU(), nn.Linear(32, prediction_length))

    def forward(self, past_target):
        mean = self.mlp(past_target)
        noise = 0.01 * torch.randn(mean.size(0), self.num_samples, self.prediction_length, device=mean.device)
        return mean.unsqueeze(1) + noise


torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = np.arange(400, dtype=np.float32)
series = np.sin(t / 6.0) + 0.05 * np.random.randn(400).astype(np.float32)
windows = np.stack([series[i:i + 20] for i in range(0, 380, 2)])
past = torch.tensor(windows[:, :16])
future = torch.tensor(windows[:, 16:])

net = SimpleFeedForwardNetwork().to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
losses = []
for step in range(40):
    idx = torch.arange(step * 16, step * 16 + 16) % past.size(0)
    pred = net(past[idx].to(device)).mean(dim=1)
    loss = ((pred - future[idx].to(device)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

predictor = PyTorchPredictor(["past_target"], net, batch_size=8, prediction_length=4, device=device)
test_data = [{"past_target": w[:16]} for w in windows[-10:]]
forecasts = list(predictor.predict(test_data))
assert len(forecasts) == 10 and forecasts[0]["samples"].shape == (5, 4)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
