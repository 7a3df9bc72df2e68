# source: https://github.com/pytorch/pytorch/issues/122757 (the fix)
# Hard negative: the helper returns a weighted loss and the caller moves it (`.to(device)` on a
# Module is in place and returns the module), or the helper builds the weight on the device.
import json

import torch
import torch.nn as nn


def build_criterion(num_classes, rare_class):
    weights = torch.ones(num_classes)
    weights[rare_class] = 3.0
    return nn.CrossEntropyLoss(weight=weights)


def build_aux_criterion(num_classes, device):
    return nn.CrossEntropyLoss(weight=torch.full((num_classes,), 0.5, device=device))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X = torch.randn(400, 8)
    labels = (X[:, 0] > 0).long() + (X[:, 1] > 1.0).long()
    model = nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 3)).to(device)
    loss_fn = build_criterion(3, rare_class=2)
    loss_fn.to(device)
    aux_fn = build_aux_criterion(3, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    losses = []
    for step in range(50):
        idx = torch.randint(0, 400, (40,))
        out = model(X[idx].to(device))
        target = labels[idx].to(device)
        loss = loss_fn(out, target) + 0.1 * aux_fn(out, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
