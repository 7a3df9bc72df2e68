# source: https://github.com/wengong-jin/hgraph2graph/issues/40
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
# The generator's forward returns the loss, the KL term and four accuracies as tensors on the
# GPU; the training loop logs them with np.array([kl_div, loss.item(), wacc * 100, ...]), which
# converts the CUDA accuracies to NumPy and fails (the fix adds .cpu() / .item()).
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class HierVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(12, 8)
        self.decoder = nn.Linear(4, 12)
        self.cls = nn.Linear(4, 3)

    def forward(self, x, labels, beta):
        h = self.encoder(x)
        mu, logvar = h[:, :4], h[:, 4:]
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        kl_div = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
        rec = F.mse_loss(self.decoder(z), x)
        logits = self.cls(z)
        cls_loss = F.cross_entropy(logits, labels)
        acc = (logits.argmax(dim=1) == labels).float().mean()
        loss = rec + cls_loss + beta * kl_div
        return loss, kl_div.item(), acc, acc, acc, acc


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(256, 12)
labels = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
loader = DataLoader(TensorDataset(x, labels), batch_size=32, shuffle=True)
model = HierVAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
beta = 0.1
meters = np.zeros(6)
history = []
for epoch in range(4):
    for batch in loader:
        batch = [t.to(device) for t in batch]
        model.zero_grad()
        loss, kl_div, wacc, iacc, tacc, sacc = model(*batch, beta=beta)
        loss.backward()
        optimizer.step()
        meters = meters + np.array([kl_div, loss.item(), wacc * 100, iacc * 100, tacc * 100, sacc * 100])  # expect: GL109
        history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
