# source: https://github.com/Jungjee/ASVspoof_PA/issues/7
# The training script wraps the CNN in DataParallel and then calls the model's own
# compute_center_loss() helper through the wrapper ("'DataParallel' object has no attribute
# 'compute_center_loss'").
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SpoofCNN(nn.Module):
    def __init__(self, nb_classes=2, code_dim=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, code_dim))
        self.fc = nn.Linear(code_dim, nb_classes)
        self.register_buffer("centers", torch.zeros(nb_classes, code_dim))

    def forward(self, x):
        code = self.encoder(x)
        return code, self.fc(code)

    def compute_center_loss(self, code, labels):
        return ((code - self.centers[labels]) ** 2).sum(dim=1).mean()


def train_model(model, db_gen, optimizer, epoch):
    model.train()
    history = []
    for m_batch, m_label in db_gen:
        code, output = model(m_batch)
        cce_loss = nn.functional.cross_entropy(output, m_label)
        c_loss = model.compute_center_loss(code, m_label)  # expect: GL305
        loss = cce_loss + 0.01 * c_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


torch.manual_seed(0)
x = torch.randn(256, 12)
y = (x[:, 0] > 0).long()
model = nn.DataParallel(SpoofCNN())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(4):
    history += train_model(model, DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True), optimizer, epoch)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
