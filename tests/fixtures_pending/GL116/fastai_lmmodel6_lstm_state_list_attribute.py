# source: https://forums.fast.ai/t/rnn-hidden-state-initializations-chapter-12/91887
# The thread asks about the hidden state of fastbook chapter 12's language models; the chapter's
# next model, `LMModel6`, swaps the RNN for an LSTM and keeps its two states as a plain list
# attribute, `self.h = [torch.zeros(n_layers, bs, n_hidden) for _ in range(2)]`, passed to the
# LSTM in `forward` (`res, h = self.rnn(self.i_h(x), self.h)`) and detached into the same list for
# the next batch. `model.to(device)` moves the layers, not the list, so the first batch on a GPU
# hands the LSTM host states. (Written here in plain PyTorch, with a small synthetic stream.)
# Missed: the flow engine values `self.h` as a list of host tensors at the call, but its
# module-call check only compares tensor arguments, not a container's elements (engine item).
# fails-on-cuda: Input and hidden tensors are not at the same device
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
        self.h = [torch.zeros(n_layers, bs, n_hidden) for _ in range(2)]

    def forward(self, x):
        res, h = self.rnn(self.i_h(x), self.h)  # expect: GL116
        self.h = [h_.detach() for h_ in h]
        return self.h_o(res)

    def reset(self):
        for h in self.h:
            h.zero_()


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
