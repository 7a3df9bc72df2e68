# source: https://github.com/thangvubk/SoftGroup/issues/215
# The grouping step returns its proposal-to-point index table on the CPU; the instance head
# filters it with a mask computed from scores on the GPU: `proposals_idx[mask_inds]`.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


def forward_grouping(num_points, num_proposals):
    # (proposal id, point id) pairs; the real op runs a CPU BFS and returns int tensors
    point_ids = torch.arange(num_points)
    proposal_ids = point_ids % num_proposals
    return torch.stack([proposal_ids, point_ids], dim=1)


class InstanceHead(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 16))
        self.score = nn.Linear(16, 1)
        self.offset = nn.Linear(16, dim)

    def forward(self, points):
        feats = self.backbone(points)
        return self.score(feats).squeeze(-1), self.offset(feats)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = InstanceHead().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
centers = torch.randn(4, 8) * 3
losses = []
for step in range(60):
    labels = torch.randint(0, 4, (128,))
    points = (centers[labels] + 0.3 * torch.randn(128, 8)).to(device)
    scores, offsets = model(points)
    proposals_idx = forward_grouping(points.size(0), 4)
    mask_inds = scores.detach() > -1.0
    cur_proposals_idx = proposals_idx[mask_inds].long()  # expect: GL116
    sel = cur_proposals_idx[:, 1].to(device)
    target = centers[labels].to(device) - points
    loss = nn.functional.mse_loss(offsets[sel], target[sel]) + nn.functional.softplus(-scores).mean() * 0.1
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
