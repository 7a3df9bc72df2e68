# source: https://github.com/chflame163/ComfyUI_FaceSimilarity/issues/10 (the fix), and
# detectron2-style evaluators that keep `self._cpu_device = torch.device("cpu")`
# Hard negative: every .numpy() is on a host tensor: the helper calls .cpu() first, an evaluator
# class moves outputs with `.to(self._cpu_device)` (a CPU device held in an attribute), and a
# helper receives an already-copied tensor.
import json

import numpy as np
import torch
import torch.nn as nn


def tensor2cv2(image):
    npimage = image.detach().cpu().numpy()
    return (np.clip(npimage, 0, 1) * 255).astype(np.uint8)[..., ::-1]


def histogram(values):
    return np.histogram(values.numpy(), bins=4)[0]


class Evaluator:
    def __init__(self):
        self._cpu_device = torch.device("cpu")
        self._predictions = []

    def process(self, outputs):
        outputs = outputs.to(self._cpu_device)
        self._predictions.append(outputs.numpy())

    def evaluate(self):
        return float(np.concatenate(self._predictions).mean())


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 3), nn.Sigmoid()).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
evaluator = Evaluator()
losses = []
for step in range(50):
    pixels = torch.rand(64, 3, device=device)
    out = model(pixels)
    loss = nn.functional.mse_loss(out, 1 - pixels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    evaluator.process(out.detach())

with torch.no_grad():
    out = model(torch.rand(16, 3, device=device)).reshape(4, 4, 3)
print("bgr", tensor2cv2(out).shape, histogram(out.cpu().flatten()), evaluator.evaluate())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
