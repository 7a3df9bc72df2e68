# source: https://github.com/FrancescoSaverioZuppichini/PyTorch-Deep-Learning-Template/pull/1
# The template's data package builds its train/val/test DataLoaders in get_dataloaders(...,
# batch_size, *args, **kwargs) and main.py called it with only the batch size, so the GPU training
# loaded batches in the main process from pageable memory; the PR ("added pin_memory, added
# num_workers") passes pin_memory=True and num_workers=4 at the call.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def get_dataloaders(dataset, split=(0.5, 0.5), batch_size=32, *args, **kwargs):
    n_train = int(len(dataset) * 0.75)
    train_ds, rest = random_split(dataset, [n_train, len(dataset) - n_train], generator=torch.Generator().manual_seed(0))
    n_val = int(len(rest) * split[0])
    val_ds, test_ds = random_split(rest, [n_val, len(rest) - n_val], generator=torch.Generator().manual_seed(1))
    train_dl = DataLoader(train_ds, batch_size=batch_size, shuffle=True, *args, **kwargs)  # expect: GL502
    val_dl = DataLoader(val_ds, batch_size=batch_size, *args, **kwargs)
    test_dl = DataLoader(test_ds, batch_size=batch_size, *args, **kwargs)
    return train_dl, val_dl, test_dl


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.randn(128, 3, 8, 8)
    labels = (images.mean(dim=(1, 2, 3)) > 0).long()
    params = {"lr": 0.01, "batch_size": 16, "epochs": 4}
    train_dl, val_dl, test_dl = get_dataloaders(TensorDataset(images, labels), batch_size=params["batch_size"])
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.Adam(cnn.parameters(), lr=params["lr"])
    losses = []
    for epoch in range(params["epochs"]):
        cnn.train()
        for x, y in train_dl:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(cnn(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        cnn.eval()
        with torch.no_grad():
            correct = sum((cnn(x.to(device)).argmax(1) == y.to(device)).sum().item() for x, y in val_dl)
        print(f"epoch {epoch}: val acc {correct / len(val_dl.dataset):.2f}")
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
