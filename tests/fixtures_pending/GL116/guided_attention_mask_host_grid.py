# source: https://github.com/mozilla/TTS/issues/473
# fails-on-cuda: Expected all tensors to be on the same device
# The guided-attention loss builds each sample's mask from torch.arange grids made on the CPU and
# divides them by the sample's input/output lengths, which come from the CUDA length tensors of
# the batch; the grid and the length live on different devices.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class GuidedAttentionLoss(nn.Module):
    def __init__(self, sigma=0.4):
        super().__init__()
        self.sigma = sigma

    def _make_ga_masks(self, ilens, olens):
        B = len(ilens)
        max_ilen = int(max(ilens))
        max_olen = int(max(olens))
        ga_masks = torch.zeros((B, max_olen, max_ilen))
        for idx, (ilen, olen) in enumerate(zip(ilens, olens)):
            ga_masks[idx, :olen, :ilen] = self._make_ga_mask(ilen, olen, self.sigma)
        return ga_masks

    def forward(self, att_ws, ilens, olens):
        ga_masks = self._make_ga_masks(ilens, olens).to(att_ws.device)
        return torch.mean(ga_masks * att_ws)

    @staticmethod
    def _make_ga_mask(ilen, olen, sigma):
        grid_x, grid_y = torch.meshgrid(torch.arange(olen), torch.arange(ilen), indexing="ij")
        grid_x, grid_y = grid_x.float(), grid_y.float()
        return 1.0 - torch.exp(-((grid_y / ilen - grid_x / olen) ** 2) / (2 * (sigma**2)))  # expect: GL116


class TinyAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(4, 8)
        self.k = nn.Linear(4, 8)

    def forward(self, text, mel):
        return torch.softmax(self.q(mel) @ self.k(text).transpose(1, 2), dim=-1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
text = torch.randn(64, 6, 4)
mel = torch.randn(64, 9, 4)
text_lengths = torch.full((64,), 6)
mel_lengths = torch.full((64,), 9)
loader = DataLoader(TensorDataset(text, mel, text_lengths, mel_lengths), batch_size=16, shuffle=True)
model = TinyAttention().to(device)
criterion = GuidedAttentionLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(5):
    for text_b, mel_b, text_len, mel_len in loader:
        text_b, mel_b = text_b.to(device), mel_b.to(device)
        text_len, mel_len = text_len.to(device), mel_len.to(device)
        alignments = model(text_b, mel_b)
        loss = criterion(alignments, text_len, mel_len)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
