# source: https://github.com/wgcban/ChangeFormer/issues/91
# The model is converted to half precision in main() to fit large inputs; train() (another
# function) runs plain loss.backward() / optimizer.step() with no GradScaler: pure fp16
# training (the report: the loss turns to nan).
import json

import torch
import torch.nn as nn


def train(model, optimizer, X, Y, device, steps=60):
    history = []
    for step in range(steps):
        idx = torch.randint(0, len(X), (32,))
        x, y = X[idx].to(device).half(), Y[idx].to(device)
        loss = nn.functional.cross_entropy(model(x).float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    X = torch.randn(256, 8)
    Y = (X[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    model.half()  # expect: GL206
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = train(model, optimizer, X, Y, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))


if __name__ == "__main__":
    main()
