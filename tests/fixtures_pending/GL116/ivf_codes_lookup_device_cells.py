# source: https://github.com/stanford-futuredata/ColBERT/issues/160
# The candidate generator keeps its inverted-file table (cell -> passage ids) as a CPU tensor on
# `self.ivf`; the query's top cells are computed on the GPU and used to index the table before
# the result is moved (`pids = self.ivf[cells]`, then `.cuda()` if use_gpu).
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


class CandidateGeneration:
    def __init__(self, centroids, ivf, use_gpu):
        self.centroids = centroids
        self.ivf = ivf
        self.use_gpu = use_gpu

    def get_cells(self, Q, ncells):
        scores = Q @ self.centroids.T
        return scores.topk(ncells, dim=1).indices

    def generate_candidate_pids(self, Q, ncells):
        cells = self.get_cells(Q, ncells)
        pids = self.ivf[cells]  # expect: GL116
        if self.use_gpu:
            pids = pids.cuda()
        return pids


torch.manual_seed(0)
use_gpu = torch.cuda.is_available()
device = torch.device("cuda" if use_gpu else "cpu")
passages = torch.randn(64, 8)
centroid_ids = torch.arange(64) % 8
centroids = torch.stack([passages[centroid_ids == c].mean(0) for c in range(8)]).to(device)
ivf = torch.stack([torch.nonzero(centroid_ids == c).squeeze(1)[:8] for c in range(8)])
generator = CandidateGeneration(centroids, ivf, use_gpu)
encoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-2)
passages_dev = passages.to(device)
losses = []
for step in range(60):
    target = torch.randint(0, 64, (32,))
    queries = (passages[target] + 0.3 * torch.randn(32, 8)).to(device)
    Q = encoder(queries)
    pids = generator.generate_candidate_pids(Q.detach(), ncells=2).flatten(1)
    scores = torch.cat([Q @ passages_dev.T], dim=1)
    loss = nn.functional.cross_entropy(scores, target.to(device)) + 0.0 * pids.float().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
