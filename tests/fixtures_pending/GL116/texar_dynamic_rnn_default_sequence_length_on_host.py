# source: https://github.com/asyml/texar-pytorch/pull/252
# texar-pytorch's `dynamic_rnn(cell, inputs, sequence_length=None, ...)` helper, called from the
# RNN encoders' forward: when no lengths are given it makes them itself,
# `sequence_length = torch.tensor([time_steps] * batch_size, dtype=torch.int32)`, with no
# device, and hands them to `mask_sequences(outputs, sequence_length)`, which builds the mask on
# the lengths' device and multiplies it into the GPU outputs. An encoder called without lengths
# therefore fails on a GPU; the PR makes the lengths on the inputs' device. (A one-layer LSTM
# encoder with a classifier on synthetic sequences.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def mask_sequences(sequence, sequence_length):
    max_time = sequence.size(1)
    steps = torch.arange(max_time, device=sequence_length.device)
    mask = (steps[None, :] < sequence_length[:, None]).to(sequence.dtype)
    return sequence * mask.unsqueeze(-1)  # expect: GL116


def dynamic_rnn(cell, inputs, sequence_length=None):
    batch_size, time_steps = inputs.shape[:2]
    if sequence_length is None:
        sequence_length = torch.tensor([time_steps] * batch_size, dtype=torch.int32)
    outputs, state = cell(inputs)
    outputs = mask_sequences(outputs, sequence_length)
    return outputs, state


class UnidirectionalRNNEncoder(nn.Module):
    def __init__(self, input_size=6, hidden_size=24):
        super().__init__()
        self.cell = nn.LSTM(input_size, hidden_size, batch_first=True)

    def forward(self, inputs, sequence_length=None):
        return dynamic_rnn(self.cell, inputs, sequence_length)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = UnidirectionalRNNEncoder()
        self.head = nn.Linear(24, 2)

    def forward(self, inputs):
        outputs, _ = self.encoder(inputs)
        return self.head(outputs.mean(dim=1))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
x = torch.randn(128, 7, 6, generator=g)
y = (x[:, :, 0].sum(dim=1) > 0).long()
model = Classifier().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(30):
    idx = torch.randint(0, 128, (32,), generator=g)
    inputs, labels = x[idx].to(device), y[idx].to(device)
    loss = F.cross_entropy(model(inputs), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
