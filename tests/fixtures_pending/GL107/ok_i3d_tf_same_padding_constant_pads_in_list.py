# source: https://github.com/hassony2/kinetics_i3d_pytorch/blob/786fbae06a6f/src/i3dpt.py
# Hard negative (engine-rooted false positive, benchmarks/PRECISION35.md, pending P35-A1): the
# I3D port replicates TensorFlow's "SAME" padding for strided 3D convolutions and poolings. When
# the temporal stride is above 1 the padding depends on the input's depth modulo the stride, so
# `Unit3Dpy` and `MaxPool3dTFPadding` build one `nn.ConstantPad3d` per remainder in a plain list
# (`self.pads = [nn.ConstantPad3d(x, 0) for x in padding_shapes]`) and pick one in `forward`
# (`self.pads[inp.shape[2] % self.stride[0]]`). A constant pad has no parameter and no buffer:
# `.to(device)`, `parameters()`, `state_dict()` and `train()/eval()` lose nothing by the list
# being plain. GL107 stays silent on stateless layers (`nn.ReLU`, `nn.Upsample`, pooling,
# `nn.ConstantPad2d`), but the engine's list of stateless torch.nn classes
# (`STATELESS_MODULES`, gpulint/model.py) lacks `ConstantPad3d` (and the 1d/3d zero, reflection
# and replication pads), so GL107 reports both lists.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def get_padding_shape(kernel, stride, mod=0):
    # (left, right, top, bottom, front, back) for F.pad on a (N, C, T, H, W) input
    def _pad(k, s, m):
        along = max(k - m, 0) if m else max(k - s, 0)
        return along // 2, along - along // 2

    t = _pad(kernel[0], stride[0], mod)
    h = _pad(kernel[1], stride[1], 0)
    w = _pad(kernel[2], stride[2], 0)
    return w + h + t


class Unit3Dpy(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=(3, 3, 3), stride=(2, 1, 1)):
        super().__init__()
        self.stride = stride
        shapes = [get_padding_shape(kernel_size, stride, mod) for mod in range(stride[0])]
        self.pads = [nn.ConstantPad3d(x, 0) for x in shapes]  # stateless layers, nothing to register
        self.conv3d = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, bias=False)
        self.batch3d = nn.BatchNorm3d(out_channels)

    def forward(self, inp):
        if self.stride[0] > 1:
            pad_idx = inp.shape[2] % self.stride[0]
            pad_op = self.pads[pad_idx]
            inp = pad_op(inp)
        out = self.conv3d(inp)
        out = self.batch3d(out)
        return F.relu(out)


class MaxPool3dTFPadding(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.stride = stride
        shapes = [get_padding_shape(kernel_size, stride, mod) for mod in range(stride[0])]
        self.pads = [nn.ConstantPad3d(x, 0) for x in shapes]
        self.pool = nn.MaxPool3d(kernel_size, stride, ceil_mode=True)

    def forward(self, inp):
        pad_idx = inp.shape[2] % self.stride[0]
        pad_op = self.pads[pad_idx]
        inp = pad_op(inp)
        out = self.pool(inp)
        return out


class I3D(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.conv3d_1a = Unit3Dpy(3, 8, (3, 3, 3), (2, 2, 2))
        self.maxpool_2a = MaxPool3dTFPadding((3, 3, 3), (2, 2, 2))
        self.conv3d_2b = Unit3Dpy(8, 16, (3, 3, 3), (2, 1, 1))
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.conv3d_2b(self.maxpool_2a(self.conv3d_1a(x)))
        return self.classifier(x.mean(dim=(2, 3, 4)))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = I3D().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
videos = torch.randn(12, 3, 9, 16, 16)  # odd depth: the stride-2 layers pick their second pad
labels = torch.randint(0, 5, (12,))
losses = []
for step in range(30):
    idx = torch.randint(0, 12, (4,))
    x, y = videos[idx].to(device), labels[idx].to(device)
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3,
                                     "device": next(model.parameters()).device.type}))
