# source: https://github.com/lioryariv/idr/blob/44959e7aac267775e63552d8aac6c2e9f2918cca/code/evaluation/eval.py
# Hard negative (PRECISION26 A2). IDR builds its model from a class named in the config
# (`utils.get_class(conf.get_string('train.model_class'))(conf=...)`); the renderer's forward takes
# the surface normals as the gradient of the SDF, `torch.autograd.grad(y, x, ...)` in
# `ImplicitNetwork.gradient`. The evaluation loop after `model.eval()` must run with autograd on:
# under `torch.no_grad()` the grad call raises "element 0 of tensors does not require grad and does
# not have a grad_fn". GL403 reports the loop (and its safe fix wraps it in `no_grad`): the model's
# class is reached only through the string, so the rule cannot see that its forward differentiates.
import json

import torch
import torch.nn as nn


def get_class(kls):
    parts = kls.split(".")
    module = ".".join(parts[:-1])
    m = __import__(module)
    for comp in parts[1:]:
        m = getattr(m, comp)
    return m


class ImplicitNetwork(nn.Module):
    def __init__(self, d_hidden=32):
        super().__init__()
        self.lin0 = nn.Linear(3, d_hidden)
        self.lin1 = nn.Linear(d_hidden, 1 + d_hidden)
        self.softplus = nn.Softplus(beta=100)

    def forward(self, x):
        return self.lin1(self.softplus(self.lin0(x)))

    def gradient(self, x):
        x.requires_grad_(True)
        y = self.forward(x)[:, :1]
        d_output = torch.ones_like(y, requires_grad=False, device=y.device)
        gradients = torch.autograd.grad(outputs=y, inputs=x, grad_outputs=d_output,
                                        create_graph=True, retain_graph=True, only_inputs=True)[0]
        return gradients.unsqueeze(1)


class RenderingNetwork(nn.Module):
    def __init__(self, d_feature=32):
        super().__init__()
        self.lin = nn.Linear(3 + 3 + d_feature, 3)

    def forward(self, points, normals, feature_vectors):
        return torch.tanh(self.lin(torch.cat([points, normals, feature_vectors], dim=-1)))


class IDRNetwork(nn.Module):
    def __init__(self, conf):
        super().__init__()
        self.implicit_network = ImplicitNetwork(conf["d_hidden"])
        self.rendering_network = RenderingNetwork(conf["d_hidden"])

    def get_rbg_value(self, points):
        output = self.implicit_network(points)
        g = self.implicit_network.gradient(points)
        normals = g[:, 0, :]
        return self.rendering_network(points, normals, output[:, 1:])

    def forward(self, input):
        points = input["points"]
        return {"rgb_values": self.get_rbg_value(points)}


def split_input(model_input, total_pixels, n_pixels=64):
    split = []
    for indx in torch.split(torch.arange(total_pixels, device=model_input["points"].device), n_pixels, dim=0):
        split.append({"points": torch.index_select(model_input["points"], 0, indx)})
    return split


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
conf = json.loads('{"train": {"model_class": "__main__.IDRNetwork"}, "model": {"d_hidden": 32}}')
model = get_class(conf["train"]["model_class"])(conf=conf["model"])
model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

total_pixels = 256
points = torch.rand(total_pixels, 3) * 2 - 1
rgb_gt = torch.stack([points[:, 0], points[:, 1] ** 2, points.norm(dim=-1)], dim=-1).clamp(-1, 1)
points, rgb_gt = points.to(device), rgb_gt.to(device)

first_loss = None
for epoch in range(30):
    model.train()
    out = model({"points": points})
    loss = (out["rgb_values"] - rgb_gt).abs().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if first_loss is None:
        first_loss = loss.item()

model.eval()
res = []
for s in split_input({"points": points}, total_pixels):
    out = model(s)
    res.append({"rgb_values": out["rgb_values"].detach()})
rgb_eval = torch.cat([r["rgb_values"] for r in res], dim=0)
last_loss = (rgb_eval - rgb_gt).abs().mean().item()
print("GPULINT-TRAIN " + json.dumps({"first_loss": first_loss, "last_loss": last_loss, "device": device.type}))
