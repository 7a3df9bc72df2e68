# source: https://github.com/ray-project/ray/issues/22659
# RLlib's ComplexInputNetwork builds one sub-network per component of a Tuple observation and
# keeps them in plain dicts keyed by the component index: `self.cnns`, `self.one_hot`,
# `self.flatten`. Only the CNNs are registered (`self.add_module("cnn_{}".format(i), ...)`);
# the one-hot and flatten networks are not submodules, so `model.to(device)` leaves them on the
# host (and the optimizer never sees their weights). Fixed upstream (a598458) by registering them
# with add_module as well.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def fc_net(in_size, hiddens):
    layers = []
    for h in hiddens:
        layers += [nn.Linear(in_size, h), nn.Tanh()]
        in_size = h
    return nn.Sequential(*layers)


def vision_net(channels, out_size):
    return nn.Sequential(nn.Conv2d(channels, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.LazyLinear(out_size))


class ComplexInputNetwork(nn.Module):
    def __init__(self, components, num_outputs, hiddens=(16,)):
        super().__init__()
        self.components = components
        self.cnns = {}
        self.one_hot = {}  # expect: GL107
        self.flatten_dims = {}
        self.flatten = {}  # expect: GL107
        concat_size = 0
        for i, (kind, size) in enumerate(components):
            if kind == "image":
                self.cnns[i] = vision_net(size, 8)
                concat_size += 8
                self.add_module("cnn_{}".format(i), self.cnns[i])
            elif kind == "discrete":
                self.one_hot[i] = fc_net(size, hiddens)
                concat_size += hiddens[-1]
            else:
                self.flatten[i] = fc_net(size, hiddens)
                self.flatten_dims[i] = size
                concat_size += hiddens[-1]
        self.logits_layer = nn.Linear(concat_size, num_outputs)

    def forward(self, obs):
        outs = []
        for i, component in enumerate(obs):
            if i in self.cnns:
                outs.append(self.cnns[i](component))
            elif i in self.one_hot:
                outs.append(self.one_hot[i](F.one_hot(component, self.components[i][1]).float()))
            else:
                outs.append(self.flatten[i](torch.reshape(component, [-1, self.flatten_dims[i]])))
        return self.logits_layer(torch.cat(outs, dim=1))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
components = [("image", 3), ("discrete", 5), ("box", 4)]
model = ComplexInputNetwork(components, num_outputs=3).to(device)
images = torch.rand(32, 3, 9, 9)
discrete = torch.randint(0, 5, (32,))
box = torch.randn(32, 2, 2)
targets = (discrete % 3).to(device)
obs = [images.to(device), discrete.to(device), box.to(device)]
model(obs)  # materialise the lazy layer before the optimizer sees it
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(30):
    loss = F.cross_entropy(model(obs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
