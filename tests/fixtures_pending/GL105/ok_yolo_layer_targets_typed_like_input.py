# source: https://github.com/DeNA/PyTorch_YOLOv3 (models/yolo_layer.py, YOLOLayer.forward)
# Hard negative (engine-rooted false positive, benchmarks/PRECISION14.md E2): the YOLO head picks a
# legacy tensor type from its input, `dtype = torch.cuda.FloatTensor if xin.is_cuda else
# torch.FloatTensor`, and builds its target tensors with `torch.zeros(...).type(dtype)`: they are on
# the input's device on both paths. Today GL105 reports the three `torch.zeros`/`torch.ones`: the
# forward-input flow (analysis/modules.py) moves `.type(...)` only for `.type(t.type())` or an
# argument that carries the device, not for a name bound to a CUDA/CPU tensor-type choice.
import json

import numpy as np
import torch
import torch.nn as nn


class YOLOLayer(nn.Module):
    def __init__(self, in_ch, n_anchors=2):
        super().__init__()
        self.n_anchors = n_anchors
        self.conv = nn.Conv2d(in_ch, n_anchors * 5, kernel_size=1)

    def forward(self, xin, labels):
        output = self.conv(xin)
        batchsize, fsize = output.shape[0], output.shape[2]
        dtype = torch.cuda.FloatTensor if xin.is_cuda else torch.FloatTensor
        output = output.view(batchsize, self.n_anchors, 5, fsize, fsize).permute(0, 1, 3, 4, 2)
        x_shift = dtype(np.broadcast_to(np.arange(fsize, dtype=np.float32), output.shape[:4]).copy())
        pred = output.clone()
        pred[..., 0] = torch.sigmoid(pred[..., 0]) + x_shift

        tgt_mask = torch.zeros(batchsize, self.n_anchors, fsize, fsize, 4).type(dtype)
        obj_mask = torch.ones(batchsize, self.n_anchors, fsize, fsize).type(dtype)
        target = torch.zeros(batchsize, self.n_anchors, fsize, fsize, 5).type(dtype)

        labels = labels.cpu()
        for b in range(batchsize):
            i, j = int(labels[b, 0] * fsize), int(labels[b, 1] * fsize)
            tgt_mask[b, 0, j, i, :] = 1
            target[b, 0, j, i, 0] = labels[b, 0] * fsize
            target[b, 0, j, i, 4] = 1

        output = output * torch.cat([tgt_mask, obj_mask.unsqueeze(-1)], dim=-1)
        target = target * torch.cat([tgt_mask, obj_mask.unsqueeze(-1)], dim=-1)
        return ((output - target) ** 2).sum() / batchsize


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).to(device)
head = YOLOLayer(8).to(device)
optimizer = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()), lr=0.01)
images = torch.randn(64, 3, 8, 8)
labels = torch.rand(64, 2) * 0.99
history = []
for step in range(40):
    i = (step * 16) % 64
    x, y = images[i:i + 16].to(device), labels[i:i + 16].to(device)
    loss = head(backbone(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:3]) / 3, "last_loss": sum(history[-3:]) / 3, "device": device.type}))
