# source: https://github.com/namisan/mt-dnn/pull/40
# MTDNNModel (a plain object that keeps the network, the optimizer and the config) builds the
# network, collects its parameter groups and calls self._setup_optim(), which restores the
# optimizer state of a resumed checkpoint; train.py moves the network only afterwards, through
# the wrapper's own `model.cuda()` method. The restored moment buffers stay on the host while the
# parameters and gradients are on the GPU. The PR moves `self.network.cuda()` into __init__,
# before the optimizer is built.
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim


class SANBertNetwork(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.encoder = nn.Linear(opt["dim"], opt["hidden"])
        self.LayerNorm = nn.LayerNorm(opt["hidden"])
        self.scoring = nn.Linear(opt["hidden"], opt["labels"])

    def forward(self, x):
        return self.scoring(self.LayerNorm(torch.tanh(self.encoder(x))))


class MTDNNModel(object):
    def __init__(self, opt, state_dict=None):
        self.config = opt
        self.updates = state_dict["updates"] if state_dict and "updates" in state_dict else 0
        self.network = SANBertNetwork(opt)
        if state_dict:
            self.network.load_state_dict(state_dict["state"], strict=False)
        optimizer_parameters = self._get_param_groups()
        self._setup_optim(optimizer_parameters, state_dict)
        self.optimizer.zero_grad()

    def _get_param_groups(self):
        no_decay = ["bias", "LayerNorm.weight"]
        return [
            {"params": [p for n, p in self.network.named_parameters() if not any(nd in n for nd in no_decay)],
             "weight_decay": 0.01},
            {"params": [p for n, p in self.network.named_parameters() if any(nd in n for nd in no_decay)],
             "weight_decay": 0.0},
        ]

    def _setup_optim(self, optimizer_parameters, state_dict=None):
        self.optimizer = optim.Adamax(optimizer_parameters, self.config["learning_rate"])
        if state_dict and "optimizer" in state_dict:
            self.optimizer.load_state_dict(state_dict["optimizer"])  # expect: GL111

    def update(self, x, y):
        self.network.train()
        if self.config["cuda"]:
            x = x.cuda(non_blocking=True)
            y = y.cuda(non_blocking=True)
        logits = self.network(x)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.updates += 1
        return loss.item()

    def save(self, filename):
        network_state = dict([(k, v.cpu()) for k, v in self.network.state_dict().items()])
        params = {"state": network_state, "optimizer": self.optimizer.state_dict(), "updates": self.updates}
        torch.save(params, filename)

    def cuda(self):
        self.network.cuda()


torch.manual_seed(0)
opt = {"dim": 6, "hidden": 16, "labels": 3, "learning_rate": 0.01, "cuda": torch.cuda.is_available()}
x_all = torch.randn(96, 6)
y_all = x_all[:, :3].argmax(dim=1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_all, y_all), batch_size=16)

checkpoint = os.path.join(tempfile.mkdtemp(), "model_0.pt")
first = MTDNNModel(dict(opt, cuda=False))
x0, y0 = next(iter(loader))
first.update(x0, y0)
first.save(checkpoint)

state_dict = torch.load(checkpoint, map_location="cpu")
model = MTDNNModel(opt, state_dict=state_dict)
if opt["cuda"]:
    model.cuda()
losses = []
for epoch in range(5):
    for x, y in loader:
        losses.append(model.update(x, y))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cuda" if opt["cuda"] else "cpu"}))
