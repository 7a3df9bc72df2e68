# source: https://github.com/mozilla/TTS/issues/473 (the fix suggested in the thread)
# Hard negative: the guided-attention loss builds every helper tensor on the device of the
# attention weights it is given (`device=att_ws.device`), through a @staticmethod that takes it.
import json

import torch
import torch.nn as nn


class GuidedAttentionLoss(nn.Module):
    def __init__(self, sigma=0.4):
        super().__init__()
        self.sigma = sigma

    def forward(self, att_ws, ilens, olens):
        B = len(ilens)
        masks = torch.zeros((B, max(olens), max(ilens)), device=att_ws.device)
        for idx, (ilen, olen) in enumerate(zip(ilens, olens)):
            masks[idx, :olen, :ilen] = self._make_ga_mask(ilen, olen, self.sigma, att_ws.device)
        return (masks * att_ws).mean()

    @staticmethod
    def _make_ga_mask(ilen, olen, sigma, device):
        grid_x, grid_y = torch.meshgrid(torch.arange(olen, device=device), torch.arange(ilen, device=device), indexing="ij")
        grid_x, grid_y = grid_x.float(), grid_y.float()
        return 1.0 - torch.exp(-((grid_y / ilen - grid_x / olen) ** 2) / (2 * (sigma**2)))


class Aligner(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, dec, enc):
        return torch.softmax(self.q(dec) @ self.k(enc).transpose(1, 2), dim=-1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Aligner().to(device)
criterion = GuidedAttentionLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
losses = []
for step in range(40):
    enc = torch.randn(4, 6, 8, device=device)
    dec = torch.randn(4, 9, 8, device=device)
    loss = criterion(model(dec, enc), [6, 6, 5, 4], [9, 8, 9, 7])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
