# Hard negative (PRECISION55, P55-1): a guided-attention loss (Tachibana et al. 2017) builds its
# penalty grid with `torch.as_tensor(np.mgrid[...])` on the host, combines it with the sequence
# lengths (host: the collate function returns them as CPU tensors) and only then moves the
# penalty to the attention weights' device. No host tensor meets a device tensor.
# Shape of janvainer/speedyspeech code/losses.py `GuidedAttentionLoss.forward`, called from
# code/duration_extractor.py `_train_epoch` with `slen`, `plen` from `Collate.__call__`:
# https://github.com/janvainer/speedyspeech/blob/master/code/losses.py
import json

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class GuidedAttentionLoss(nn.Module):
    def __init__(self, sigma):
        super().__init__()
        self.sigma = sigma

    def forward(self, attention_weights, len_rows, len_cols):
        B, T, N = attention_weights.shape
        y, x = torch.as_tensor(np.mgrid[0:T, 0:N]).float()
        t, n = torch.as_tensor(len_rows).float(), torch.as_tensor(len_cols).float()
        penalty = 1 - torch.exp(-(y[None, :, :] / t[:, None, None] - x[None, :, :] / n[:, None, None]) ** 2
                                / (2 * self.sigma ** 2))
        mask = (y[None, :, :] < t[:, None, None]) * (x[None, :, :] < n[:, None, None])
        penalty = penalty.masked_fill(~mask, 0).to(attention_weights.device)
        loss = torch.sum(torch.sum(penalty * attention_weights, dim=-1), dim=-1)
        loss = loss / torch.as_tensor(n * t).to(attention_weights.device)
        return torch.mean(loss)


class Aligner(nn.Module):
    def __init__(self, n_text=12, n_frames=16, dim=8):
        super().__init__()
        self.q = nn.Parameter(torch.randn(n_frames, dim))
        self.k = nn.Parameter(torch.randn(n_text, dim))

    def forward(self, batch_size):
        scores = self.q @ self.k.t()
        return torch.softmax(scores, dim=-1).unsqueeze(0).expand(batch_size, -1, -1)


model = Aligner().to(device)
criterion = GuidedAttentionLoss(sigma=0.3)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-2)
slen = torch.tensor([16, 14, 12])  # lengths stay on the host, as the collate function returns them
plen = torch.tensor([12, 10, 9])
losses = []
for step in range(40):
    optimizer.zero_grad()
    att = model(len(slen))
    loss = criterion(att, slen, plen)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
