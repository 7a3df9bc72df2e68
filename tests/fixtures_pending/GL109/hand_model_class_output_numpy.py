# source: https://github.com/Hzzone/pytorch-openpose/pull/16
# A keypoint-estimator class moves self.model to CUDA in __init__ (only when available) and,
# in __call__, turns the model output straight into numpy: `self.model(data).numpy()`.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


class HandNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))

    def forward(self, x):
        return self.body(x)


class Hand:
    def __init__(self, model):
        self.model = model
        if torch.cuda.is_available():
            self.model = self.model.cuda()
        self.model.eval()

    def __call__(self, img):
        data = torch.from_numpy(img).float().permute(2, 0, 1).unsqueeze(0)
        if torch.cuda.is_available():
            data = data.cuda()
        with torch.no_grad():
            output = self.model(data).numpy()  # expect: GL109
        return np.unravel_index(output[0, 0].argmax(), output.shape[2:])


torch.manual_seed(0)
net = HandNet()
optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
losses = []
for step in range(40):
    x = torch.rand(8, 3, 10, 10)
    target = torch.zeros(8, 2, 10, 10)
    target[:, 0, 4, 6] = 1.0
    loss = nn.functional.mse_loss(net(x), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

estimator = Hand(net)
peak = estimator(np.random.default_rng(0).random((10, 10, 3)))
print("peak", peak)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": next(net.parameters()).device.type}))
