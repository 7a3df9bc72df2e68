# source: https://github.com/JDAI-CV/fast-reid/pull/509
# Re-ID evaluation: a helper extracts features with the (device) model and another computes the
# distance matrix from them; the script then calls `distmat.numpy()` on the device result.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def extract_features(model, images, device):
    model.eval()
    with torch.no_grad():
        feats = model(images.to(device))
    return F.normalize(feats, dim=1)


def compute_distmat(query_feat, gallery_feat):
    return 2 - 2 * torch.mm(query_feat, gallery_feat.t())


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ids = torch.randint(0, 4, (200,))
centers = torch.randn(4, 12)
images = centers[ids] + 0.3 * torch.randn(200, 12)
model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 8), nn.Linear(8, 4)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(50):
    idx = torch.randint(0, 200, (32,))
    loss = F.cross_entropy(model(images[idx].to(device)), ids[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

q_feat = extract_features(model, images[:20], device)
g_feat = extract_features(model, images[20:], device)
distmat = compute_distmat(q_feat, g_feat)
distmat = distmat.numpy()  # expect: GL109
rank1 = (ids[20:].numpy()[np.argmin(distmat, axis=1)] == ids[:20].numpy()).mean()
print("rank-1", rank1)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
