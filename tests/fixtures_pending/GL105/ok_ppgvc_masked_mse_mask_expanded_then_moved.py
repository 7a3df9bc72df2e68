# Source shape: https://github.com/liusongxiang/ppg-vc/blob/main/src/loss_fn.py (MaskedMSELoss.get_mask)
# Pending hard negative (PRECISION44, P44-2): the mask's range is made on the host,
# `seq_range = torch.arange(0, max_len).long()`, expanded with `.expand(batch_size, max_len)` and
# moved with `.to(lengths.device)` before it meets anything. `max_len = torch.max(lengths)` is a
# 0-dim tensor on the lengths' device; as a size argument of `expand` it is read as a number.
# GL105 reports the factory today: the engine counts the device `max_len` passed to the host
# tensor's `.expand(...)` as the host tensor meeting a device one.
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class MaskedMSELoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.MSELoss(reduction="none")

    def get_mask(self, lengths):
        # lengths: [B,]
        max_len = torch.max(lengths)
        batch_size = lengths.size(0)
        seq_range = torch.arange(0, max_len).long()
        seq_range_expand = seq_range.unsqueeze(0).expand(batch_size, max_len).to(lengths.device)
        seq_length_expand = lengths.unsqueeze(1).expand_as(seq_range_expand)
        return (seq_range_expand < seq_length_expand).float()

    def forward(self, mel_pred, mel_trg, lengths):
        mask = self.get_mask(lengths).unsqueeze(-1)
        mask_ = mask.expand_as(mel_trg)
        loss = self.loss(mel_pred, mel_trg)
        return ((loss * mask_).sum()) / mask_.sum()


class Decoder(nn.Module):
    def __init__(self, in_dim=6, out_dim=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 16), nn.Tanh(), nn.Linear(16, out_dim))

    def forward(self, x):
        return self.net(x)


model = Decoder().to(device)
criterion = MaskedMSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
ppgs = torch.randn(8, 12, 6)
mels = torch.tanh(ppgs[..., :4] * 0.5)
lengths = torch.tensor([12, 10, 9, 12, 7, 11, 12, 8])
x, y, lens = ppgs.to(device), mels.to(device), lengths.to(device)

losses = []
for step in range(30):
    optimizer.zero_grad()
    loss = criterion(model(x), y, lens)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
