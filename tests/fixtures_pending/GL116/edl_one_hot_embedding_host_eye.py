# source: https://github.com/dougbrion/pytorch-classification-uncertainty/issues/18
# The evidential-deep-learning trainer moves each batch's labels to the device, then builds the
# targets with a helper, `one_hot_embedding(labels, num_classes)`, that indexes a host identity
# matrix: `y = torch.eye(num_classes); return y[labels]`. CUDA indices into a CPU table fail
# ("indices should be either on cpu or on the same device as the indexed tensor (cpu)") before the
# caller's `y = y.to(device)` runs. The fix builds the eye on the device.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def get_device():
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda:0" if use_cuda else "cpu")
    return device


def one_hot_embedding(labels, num_classes=10):
    # Convert to One Hot Encoding
    y = torch.eye(num_classes)
    return y[labels]  # expect: GL116


def relu_evidence(y):
    return F.relu(y)


def loglikelihood_loss(y, alpha, device=None):
    if not device:
        device = get_device()
    y = y.to(device)
    alpha = alpha.to(device)
    S = torch.sum(alpha, dim=1, keepdim=True)
    err = torch.sum((y - (alpha / S)) ** 2, dim=1, keepdim=True)
    var = torch.sum(alpha * (S - alpha) / (S * S * (S + 1)), dim=1, keepdim=True)
    return err + var


def edl_mse_loss(output, target, device=None):
    evidence = relu_evidence(output)
    alpha = evidence + 1
    return torch.mean(loglikelihood_loss(target, alpha, device=device))


def train_model(model, dataloaders, num_classes, criterion, optimizer, num_epochs=5, device=None, uncertainty=False):
    if not device:
        device = get_device()
    losses = []
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            for i, (inputs, labels) in enumerate(dataloaders[phase]):
                inputs = inputs.to(device)
                labels = labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    if uncertainty:
                        y = one_hot_embedding(labels, num_classes)
                        y = y.to(device)
                        outputs = model(inputs)
                        loss = criterion(outputs, y.float(), device)
                    else:
                        outputs = model(inputs)
                        loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                        losses.append(loss.item())
    return model, losses


if __name__ == "__main__":
    torch.manual_seed(0)
    device = get_device()
    num_classes = 4
    x = torch.randn(96, 12)
    y = x[:, :num_classes].argmax(dim=1)
    dataloaders = {
        "train": DataLoader(TensorDataset(x[:64], y[:64]), batch_size=16, shuffle=True),
        "val": DataLoader(TensorDataset(x[64:], y[64:]), batch_size=16),
    }
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, num_classes)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    model, losses = train_model(model, dataloaders, num_classes, edl_mse_loss, optimizer, num_epochs=6, device=device, uncertainty=True)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
