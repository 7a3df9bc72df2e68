# source: https://github.com/pytorch/pytorch/issues/122757
# The weighted loss is "defined somewhere else": a helper builds CrossEntropyLoss(weight=...)
# from a host tensor and returns it; model outputs and labels are both on the GPU, the loss's
# weight is not.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


def build_criterion(num_classes, rare_class):
    weights = torch.ones(num_classes)
    weights[rare_class] = 3.0
    return nn.CrossEntropyLoss(weight=weights)  # expect: GL108


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X = torch.randn(400, 8)
    labels = (X[:, 0] > 0).long() + (X[:, 1] > 1.0).long()
    model = nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 3)).to(device)
    loss_fn = build_criterion(3, rare_class=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    losses = []
    for step in range(50):
        idx = torch.randint(0, 400, (40,))
        model_output = model(X[idx].to(device))
        loss = loss_fn(input=model_output, target=labels[idx].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
