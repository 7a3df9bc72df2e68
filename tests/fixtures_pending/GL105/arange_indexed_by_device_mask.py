# source: https://github.com/ykdai/BasicPBC/issues/4
# Inside the model's forward-path matching code, torch.arange(0, n) (host) is indexed with a
# boolean mask computed from the device match scores.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json

import torch
import torch.nn as nn


class Matcher(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, src, ref):
        scores = self.proj(src) @ self.proj(ref).t()
        indices0 = scores.argmax(dim=1)
        matched = self.matched_ids(indices0, scores)
        return scores, matched

    def matched_ids(self, indices0, scores):
        confident = scores.max(dim=1).values > 0
        return torch.arange(0, indices0.shape[0])[confident]  # expect: GL105


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Matcher().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(40):
    ref = torch.randn(10, 8, device=device)
    perm = torch.randperm(10, device=device)
    src = ref[perm] + 0.1 * torch.randn(10, 8, device=device)
    scores, matched = model(src, ref)
    loss = nn.functional.cross_entropy(scores, perm)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
