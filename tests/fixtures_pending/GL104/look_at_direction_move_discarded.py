# source: https://github.com/daniilidis-group/neural_renderer/pull/52
# neural_renderer's `look(vertices, eye, direction, up)` converts `eye` and `direction` to tensors
# on the vertices' device; for a `direction` that is already a tensor it writes
# `direction.to(device)` as a statement, so a CPU direction stays on the CPU and the cross product
# with the device `up` vector fails (the PR: "torch.Tensor.to is not in-place, need an assignment").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def look(vertices, eye, direction=None, up=None):
    """"Look at" transformation of vertices."""
    device = vertices.device
    if direction is None:
        direction = torch.from_numpy(np.array([0, 1, 0], np.float32)).to(device)
    elif isinstance(direction, list) or isinstance(direction, tuple):
        direction = torch.from_numpy(np.array(direction, np.float32)).to(device)
    elif isinstance(direction, np.ndarray):
        direction = torch.from_numpy(direction).to(device)
    else:
        direction.to(device)  # expect: GL104
    if isinstance(eye, list) or isinstance(eye, tuple):
        eye = torch.from_numpy(np.array(eye, np.float32)).to(device)
    elif isinstance(eye, np.ndarray):
        eye = torch.from_numpy(eye).to(device)
    else:
        eye = eye.to(device)
    if up is None:
        up = torch.tensor([0.0, 0.0, 1.0], device=device)
    if eye.ndimension() == 1:
        eye = eye[None, :]
    if direction.ndimension() == 1:
        direction = direction[None, :]
    if up.ndimension() == 1:
        up = up[None, :]
    z_axis = F.normalize(direction, eps=1e-5)
    x_axis = F.normalize(torch.cross(up, z_axis, dim=-1), eps=1e-5)
    y_axis = F.normalize(torch.cross(z_axis, x_axis, dim=-1), eps=1e-5)
    r = torch.cat((x_axis[:, None, :], y_axis[:, None, :], z_axis[:, None, :]), dim=1)
    vertices = vertices - eye[:, None, :]
    return torch.matmul(vertices, r.transpose(1, 2))


class Mesh(nn.Module):
    def __init__(self, num_vertices=12):
        super().__init__()
        self.vertices = nn.Parameter(torch.randn(1, num_vertices, 3) * 0.5)

    def forward(self, eye, direction):
        return look(self.vertices, eye, direction=direction)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
target = torch.randn(1, 12, 3)
camera_direction = torch.tensor([1.0, 0.0, 0.0])
model = Mesh().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
losses = []
for step in range(40):
    projected = model([0.0, 0.0, -2.0], camera_direction)
    loss = F.mse_loss(projected, target.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
