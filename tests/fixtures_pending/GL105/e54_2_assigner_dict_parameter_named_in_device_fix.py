# source: https://github.com/jozhang97/DETA/issues/14 (the Stage1Assigner shape of the existing
# GL105 deta fixture, reached here through a nested dict of model outputs; E54-2 repro)
# The criterion hands `outputs["enc"]` (a dict the proposal model returns) to an assigner whose
# `torch.arange(len(anchors))` is made on the host. GL105 reports it, rightly, but its safe fix
# writes `device=outputs.device`: `outputs` is a dict, so the fixed script fails with
# "AttributeError: 'dict' object has no attribute 'device'". Expected: `device=anchors.device`,
# or no fix (the message_unnamed path).
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Assigner(nn.Module):
    def forward(self, outputs, targets):
        anchors = outputs["anchors"][0]
        labels = (anchors.sum(-1) > targets[0]["boxes"].sum()).long()
        ids = torch.arange(len(anchors))  # expect: GL105
        return ids[labels == 1]


class Criterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.assigner = Assigner()

    def forward(self, outputs, targets):
        pos = self.assigner(outputs["enc"], targets)
        pred = outputs["enc"]["anchors"][0]
        return F.mse_loss(pred[pos], targets[0]["boxes"].expand(len(pos), -1)) if len(pos) else pred.sum() * 0


class Proposals(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, feats, anchors):
        return {"enc": {"anchors": anchors + self.lin(feats)}}


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Proposals().to(device)
    criterion = Criterion()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(30):
        x = torch.randn(1, 8, 4).to(device)
        targets = [{"boxes": torch.full((4,), -0.5).to(device)}]
        loss = criterion(model(x, x), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
