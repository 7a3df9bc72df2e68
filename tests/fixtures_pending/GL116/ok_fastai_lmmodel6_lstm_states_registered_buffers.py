# source: https://forums.fast.ai/t/rnn-hidden-state-initializations-chapter-12/91887
# Hard negative for GL116/GL106: the chapter's LSTM language model with its two states registered
# as non-persistent buffers (`self.register_buffer("h0", ...)`, `"c0"`), passed as a tuple and
# detached back into the buffers after each batch; `model.to(device)` moves them.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LMModel6(nn.Module):
    def __init__(self, vocab_sz, n_hidden, n_layers, bs):
        super().__init__()
        self.i_h = nn.Embedding(vocab_sz, n_hidden)
        self.rnn = nn.LSTM(n_hidden, n_hidden, n_layers, batch_first=True)
        self.h_o = nn.Linear(n_hidden, vocab_sz)
        self.register_buffer("h0", torch.zeros(n_layers, bs, n_hidden), persistent=False)
        self.register_buffer("c0", torch.zeros(n_layers, bs, n_hidden), persistent=False)

    def forward(self, x):
        res, (h0, c0) = self.rnn(self.i_h(x), (self.h0, self.c0))
        self.h0, self.c0 = h0.detach(), c0.detach()
        return self.h_o(res)

    def reset(self):
        self.h0.zero_()
        self.c0.zero_()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vocab_sz, n_hidden, n_layers, bs, sl = 12, 32, 2, 8, 6
stream = torch.arange(0, bs * sl * 10 + 1) % vocab_sz
xs = stream[:-1].view(-1, sl)
ys = stream[1:].view(-1, sl)
dl = DataLoader(TensorDataset(xs, ys), batch_size=bs, shuffle=False, drop_last=True)

model = LMModel6(vocab_sz, n_hidden, n_layers, bs).to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for epoch in range(4):
    model.reset()
    model.train()
    for xb, yb in dl:
        xb, yb = xb.to(device), yb.to(device)
        out = model(xb)
        loss = F.cross_entropy(out.view(-1, vocab_sz), yb.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
