# Source shape: https://github.com/POSTECH-CVLab/PyTorch-StudioGAN/blob/master/src/worker.py (run_k_nearest_neighbor)
# Pending hard negative (PRECISION44, P44-1): the analysis block runs under
# `with torch.no_grad() if not requires_grad else misc.dummy_context_mgr() as ctx:`, gradients
# off unless latent optimization / Langevin sampling needs them for the generator. The feature
# extractor's calls in the loop are under that conditional `no_grad`; GL403 reports them today
# because a conditional expression as the `with` item is not read as a grad-mode context.
import contextlib
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@contextlib.contextmanager
def dummy_context_mgr():
    yield None


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.features(x))


inputs = torch.randn(64, 8)
data = TensorDataset(inputs, (inputs[:, 0] > 0).long())
loader = DataLoader(data, batch_size=16, shuffle=True)
model = Classifier().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

losses = []
for epoch in range(10):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def run_k_nearest_neighbor(requires_grad=False):
    with torch.no_grad() if not requires_grad else dummy_context_mgr() as ctx:
        extractor = model.features
        extractor.eval()
        anchor = torch.randn(1, 8, device=device)
        anchor_embed = extractor(anchor)
        distances = []
        for x, _ in DataLoader(data, batch_size=16, shuffle=False):
            real_embed = extractor(x.to(device))
            distances.append(torch.square(real_embed - anchor_embed).mean(dim=1).cpu())
        return torch.cat(distances).argsort()[:5]


nearest = run_k_nearest_neighbor()
print("nearest", nearest.tolist())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
