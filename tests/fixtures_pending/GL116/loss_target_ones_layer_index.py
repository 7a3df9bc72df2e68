# source: https://github.com/iscyy/ultralyticsPro/issues/159
# A ComputeLoss class (a plain class with __call__, not an nn.Module) records which layer each
# target came from with (torch.ones(size=(len(b),)) * i) on the host, then uses it as an index
# and filters it with a mask computed on the device.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


class ComputeLoss:
    def __init__(self, model):
        self.nl = model.nl

    def __call__(self, preds, targets):
        from_which_layer = []
        for i in range(self.nl):
            b = torch.nonzero(targets[:, 0] == i).flatten()
            from_which_layer.append(torch.ones(size=(len(b),)) * i)
        from_which_layer = torch.cat(from_which_layer).long()
        fg_mask_inboxes = targets[:, 1:].abs().sum(dim=1) > 0
        from_which_layer = from_which_layer[fg_mask_inboxes]  # expect: GL116
        stacked = torch.stack(preds)
        chosen = stacked[from_which_layer.to(stacked.device), torch.arange(len(from_which_layer), device=stacked.device)]
        return nn.functional.mse_loss(chosen, targets[fg_mask_inboxes, 1:])


class TwoHead(nn.Module):
    nl = 2

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(4, 3) for _ in range(self.nl)])

    def forward(self, x):
        return [h(x) for h in self.heads]


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TwoHead().to(device)
compute_loss = ComputeLoss(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for step in range(40):
    x = torch.randn(16, 4, device=device)
    layer_id = torch.arange(16, device=device) % 2
    targets = torch.cat([layer_id[:, None].float(), x[:, :3] * (1 + layer_id[:, None])], dim=1)
    order = torch.argsort(layer_id, stable=True)
    loss = compute_loss([p[order] for p in model(x)], targets[order])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
