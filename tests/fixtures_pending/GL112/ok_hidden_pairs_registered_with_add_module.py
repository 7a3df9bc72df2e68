# source: https://github.com/pytorch/pytorch/issues/715 (the add_module work-around)
# (the work-around given in the report) The [Linear, activation] pairs stay in a plain list for
# forward's loop, but each Linear is also registered with add_module, so `net.to(device)` moves it
# and the optimizer trains it.
import json

import torch
import torch.nn as nn

options = {"n_layers": 2, "n_hid": 24, "act": "Tanh", "n_in": 10}


class SNLINet(nn.Module):
    def __init__(self, options):
        super().__init__()
        self.inp = nn.Linear(options["n_in"], options["n_hid"])
        self.hids = []
        for li in range(options["n_layers"]):
            layer = nn.Linear(options["n_hid"], options["n_hid"])
            self.add_module("hid%d" % li, layer)
            self.hids.append([layer, getattr(nn, options["act"])()])
        self.classifier = nn.Linear(options["n_hid"], 3)

    def forward(self, premise_hypothesis):
        h = torch.tanh(self.inp(premise_hypothesis))
        for layer, act in self.hids:
            h = act(layer(h))
        return self.classifier(h)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(300, options["n_in"])
y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
net = SNLINet(options).to(device)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
crit = nn.CrossEntropyLoss()
losses = []
for step in range(40):
    idx = torch.randint(0, 300, (32,))
    xb, yb = x[idx].to(device), y[idx].to(device)
    opt.zero_grad()
    loss = crit(net(xb), yb)
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
