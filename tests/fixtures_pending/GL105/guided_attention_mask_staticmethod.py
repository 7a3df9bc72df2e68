# source: https://github.com/mozilla/TTS/issues/473
# A guided-attention loss (an nn.Module) builds its masks in helper methods called from forward:
# the batch mask is torch.zeros(...) without a device, filled from a @staticmethod that uses
# torch.arange over Python ints (host, harmless alone); the mask then multiplies the device
# attention weights.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class GuidedAttentionLoss(nn.Module):
    def __init__(self, sigma=0.4):
        super().__init__()
        self.sigma = sigma

    def forward(self, att_ws, ilens, olens):
        masks = self._make_ga_masks(ilens, olens)
        return (masks * att_ws).mean()

    def _make_ga_masks(self, ilens, olens):
        B = len(ilens)
        max_ilen, max_olen = int(max(ilens)), int(max(olens))
        ga_masks = torch.zeros((B, max_olen, max_ilen))  # expect: GL105
        for idx, (ilen, olen) in enumerate(zip(ilens, olens)):
            ga_masks[idx, :olen, :ilen] = self._make_ga_mask(ilen, olen, self.sigma)
        return ga_masks

    @staticmethod
    def _make_ga_mask(ilen, olen, sigma):
        grid_x, grid_y = torch.meshgrid(torch.arange(olen), torch.arange(ilen), indexing="ij")
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
    att_ws = model(dec, enc)
    loss = criterion(att_ws, [6, 6, 5, 4], [9, 8, 9, 7])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
