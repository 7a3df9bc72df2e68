# source: https://github.com/pytorch/pytorch/issues/1494
# fails-on-cuda: Cannot re-initialize CUDA in forked subprocess
# A synthetic benchmark dataset creates its one input tensor on the GPU in __init__
# (torch.randn(..., device=torch.device("cuda"))) and every __getitem__ returns it; the
# DataLoader's forked workers then touch CUDA ("Cannot re-initialize CUDA in forked subprocess").
import json

import torch
import torch.nn as nn
from torch.utils import data


class DummyDataset(data.Dataset):
    def __init__(self, num_classes):
        super(DummyDataset, self).__init__()
        self.tensor = torch.randn(3, 8, 8, device=torch.device("cuda" if torch.cuda.is_available() else "cpu"))  # expect: GL114
        self.num_classes = num_classes

    def __getitem__(self, index):
        return self.tensor, index % self.num_classes

    def __len__(self):
        return 256


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = data.DataLoader(DummyDataset(num_classes=4), batch_size=32, num_workers=2)
    history = []
    for epoch in range(3):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
