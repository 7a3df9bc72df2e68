# source: https://github.com/yjxiong/action-detection/issues/36
# Hard negative: the model is always wrapped in DataParallel and moved; DataParallel scatters the
# CPU input batch to its GPUs itself (the maintainers' answer), and the targets are moved by hand.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
imgs = torch.randn(256, 1, 8, 8)
labels = (imgs[:, 0, :4].mean(dim=(1, 2)) > imgs[:, 0, 4:].mean(dim=(1, 2))).long()
loader = DataLoader(TensorDataset(imgs, labels), batch_size=32, shuffle=True, pin_memory=torch.cuda.is_available())

net = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 64, 2))
model = nn.DataParallel(net).to(device) if torch.cuda.is_available() else net
criterion = nn.CrossEntropyLoss().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

losses = []
for epoch in range(4):
    for i, (inputs, target) in enumerate(loader):
        target = target.to(device, non_blocking=True)
        output = model(inputs)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
