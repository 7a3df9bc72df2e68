# source: https://github.com/jayliu0313/Shape-Guided/issues/11
# A patch-feature memory bank kept on the host as a plain tensor attribute of a (non-Module)
# class; nearest-neighbour indices are computed on the device and used to index the bank.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


class FeatureLibrary:
    def __init__(self):
        self.rgb_features = None

    def fit(self, feats):
        self.rgb_features = feats.detach().cpu()

    def reconstruct(self, query, bank_on_device):
        knn_idx = torch.cdist(query, bank_on_device).argmin(dim=1)
        knn_features = self.rgb_features[knn_idx]  # expect: GL116
        return knn_features.to(query.device)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
optimizer = torch.optim.Adam(encoder.parameters(), lr=0.01)
normal = torch.randn(128, 6)
library = FeatureLibrary()
losses = []
for step in range(40):
    feats = encoder(normal.to(device))
    library.fit(feats)
    query = encoder(normal[:32].to(device) + 0.05 * torch.randn(32, 6, device=device))
    recon = library.reconstruct(query, feats.detach())
    loss = nn.functional.mse_loss(query, recon) + 0.1 * feats.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
