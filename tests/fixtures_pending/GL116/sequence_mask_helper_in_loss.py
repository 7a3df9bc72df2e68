# source: https://github.com/mozilla/TTS/pull/549
# losses.py-style: a module-level sequence_mask() helper builds torch.arange(max_len) without a
# device and compares it with the device lengths; a masked L1 loss calls it.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


def sequence_mask(sequence_length, max_len=None):
    if max_len is None:
        max_len = int(sequence_length.max())
    seq_range = torch.arange(max_len, dtype=sequence_length.dtype)
    return seq_range.unsqueeze(0) < sequence_length.unsqueeze(1)  # expect: GL116


class L1LossMasked(nn.Module):
    def forward(self, x, target, length):
        mask = sequence_mask(sequence_length=length, max_len=target.size(1)).unsqueeze(2).float()
        loss = nn.functional.l1_loss(x * mask, target * mask, reduction="sum")
        return loss / mask.sum()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
decoder = nn.GRU(4, 4, batch_first=True).to(device)
criterion = L1LossMasked()
optimizer = torch.optim.Adam(decoder.parameters(), lr=0.02)
losses = []
for step in range(40):
    frames = torch.randn(8, 12, 4, device=device)
    lengths = torch.randint(6, 13, (8,), device=device)
    out, _ = decoder(frames)
    loss = criterion(out, frames.cumsum(dim=1) * 0.1, lengths)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
