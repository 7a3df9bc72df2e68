# source: https://github.com/samuelyu2002/ImVisible/issues/2
# A two-headed network (regression + classification) trains on loss = MSE + cross_entropy and keeps
# three running sums with `+=` on the tensors themselves; every batch's graph stays alive until the
# epoch ends (the maintainer's fix: `+= loss.item()` on each). The validation sums are made under
# torch.no_grad() and hold no graph.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class TwoHeadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
        self.reg = nn.Linear(32, 2)
        self.cls = nn.Linear(32, 3)

    def forward(self, x):
        h = self.body(x)
        return self.reg(h), self.cls(h)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(256, 10)
points = X[:, :2] * 0.5
labels = (X[:, 2] > 0.5).long() + (X[:, 2] > -0.5).long()
train_loader = DataLoader(TensorDataset(X[:192], points[:192], labels[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(X[192:], points[192:], labels[192:]), batch_size=32)
model = TwoHeadNet().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

history = []
for epoch in range(6):
    model.train()
    running_loss = 0.0
    running_loss_MSE = 0.0
    running_loss_cross_entropy = 0.0
    for inputs, pts, lbl in train_loader:
        inputs, pts, lbl = inputs.to(device), pts.to(device), lbl.to(device)
        optimizer.zero_grad()
        pred_pts, logits = model(inputs)
        MSE = F.mse_loss(pred_pts, pts)
        cross_entropy = F.cross_entropy(logits, lbl)
        loss = MSE + cross_entropy
        loss.backward()
        optimizer.step()
        running_loss += loss  # expect: GL402
        running_loss_MSE += MSE  # expect: GL402
        running_loss_cross_entropy += cross_entropy  # expect: GL402
    model.eval()
    val_running_loss = 0.0
    with torch.no_grad():
        for inputs, pts, lbl in val_loader:
            inputs, pts, lbl = inputs.to(device), pts.to(device), lbl.to(device)
            pred_pts, logits = model(inputs)
            val_running_loss += F.mse_loss(pred_pts, pts) + F.cross_entropy(logits, lbl)
    history.append(float(running_loss) / len(train_loader))
    print(f"epoch {epoch}: train {float(running_loss):.3f} mse {float(running_loss_MSE):.3f} "
          f"ce {float(running_loss_cross_entropy):.3f} val {float(val_running_loss):.3f}")

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
