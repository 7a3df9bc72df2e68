# source: https://github.com/coqui-ai/TTS/issues/1816
# Tacotron training with the stop-token loss on: TacotronLoss.__init__ builds its child criterion
# as BCELossMasked(pos_weight=torch.tensor(c.stopnet_pos_weight)), and BCELossMasked.__init__ keeps
# the tensor it is given as a plain attribute (`self.pos_weight = pos_weight`). The trainer moves
# the whole criterion to the GPU with the model; a plain attribute is neither a parameter nor a
# buffer, so binary_cross_entropy_with_logits gets a host pos_weight (fixed in PR #1872 with
# register_buffer). The loss is a module of its own, configured from a config object. The tensor
# here has one element (the PR's `torch.tensor([pos_weight])`): current PyTorch accepts a 0-dim
# host tensor as a scalar operand.
# fails-on-cuda: Expected all tensors to be on the same device
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


def sequence_mask(sequence_length, max_len):
    seq_range = torch.arange(max_len, device=sequence_length.device)
    return seq_range.unsqueeze(0) < sequence_length.unsqueeze(1)


class BCELossMasked(nn.Module):
    def __init__(self, pos_weight):
        super().__init__()
        self.pos_weight = pos_weight  # expect: GL106

    def forward(self, x, target, length):
        mask = sequence_mask(length, target.size(1)).float()
        x = x * mask
        target = target * mask
        loss = F.binary_cross_entropy_with_logits(x, target, pos_weight=self.pos_weight, reduction="sum")
        return loss / mask.sum()


class MSELossMasked(nn.Module):
    def forward(self, x, target, length):
        mask = sequence_mask(length, target.size(1)).unsqueeze(2).float()
        return F.mse_loss(x * mask, target * mask, reduction="sum") / (mask.sum() * x.size(2))


class TacotronLoss(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.decoder_alpha = c.decoder_loss_alpha
        self.criterion = MSELossMasked()
        self.criterion_st = BCELossMasked(pos_weight=torch.tensor([c.stopnet_pos_weight])) if c.stopnet else None

    def forward(self, decoder_output, mel_input, stopnet_output, stopnet_target, lengths):
        loss = self.decoder_alpha * self.criterion(decoder_output, mel_input, lengths)
        if self.criterion_st is not None:
            loss = loss + self.criterion_st(stopnet_output, stopnet_target, lengths)
        return loss


class TinyTacotron(nn.Module):
    def __init__(self, n_mels=6, hidden=24):
        super().__init__()
        self.rnn = nn.GRU(n_mels, hidden, batch_first=True)
        self.mel_out = nn.Linear(hidden, n_mels)
        self.stopnet = nn.Linear(hidden + n_mels, 1)

    def forward(self, mel_in):
        h, _ = self.rnn(mel_in)
        mel = self.mel_out(h)
        stop = self.stopnet(torch.cat([h, mel], dim=-1)).squeeze(-1)
        return mel, stop


def make_batch(g, batch=8, max_len=12, n_mels=6):
    lengths = torch.randint(6, max_len + 1, (batch,), generator=g)
    mel = torch.sin(torch.arange(max_len).float()[None, :, None] / 3 + torch.arange(n_mels).float()[None, None, :])
    mel = mel.expand(batch, -1, -1) + 0.05 * torch.randn(batch, max_len, n_mels, generator=g)
    stop_target = (torch.arange(max_len)[None, :] >= (lengths[:, None] - 1)).float()
    return mel, stop_target, lengths


config = SimpleNamespace(decoder_loss_alpha=1.0, stopnet=True, stopnet_pos_weight=10.0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyTacotron().to(device)
criterion = TacotronLoss(config).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(0)
losses = []
for step in range(60):
    mel, stop_target, lengths = make_batch(g)
    mel, stop_target, lengths = mel.to(device), stop_target.to(device), lengths.to(device)
    mel_in = torch.cat([torch.zeros_like(mel[:, :1]), mel[:, :-1]], dim=1)
    decoder_output, stopnet_output = model(mel_in)
    loss = criterion(decoder_output, mel, stopnet_output, stop_target, lengths)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
