# source: https://github.com/styalai/xLSTM-pytorch/issues/2 (fixed by styalai/xLSTM-pytorch#3, "Added buffers")
# The sLSTM block creates its recurrent states in init_states(x_example), a method its __init__
# calls: `self.ht_1 = torch.zeros(1, 1, d, device=x.device)` etc. on the example input's device.
# They are plain attributes, not buffers, so a block built from a CPU example and then moved with
# `model.to(device)` keeps them on the CPU, and forward mixes them with the device activations.
# The fix registers them as buffers.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class sLSTMblock(nn.Module):
    def __init__(self, x_example, dropout=0.0):
        super().__init__()
        self.input_size = x_example.shape[2]
        self.ln = nn.LayerNorm(self.input_size)
        self.drop = nn.Dropout(dropout)
        self.i_gate = nn.Linear(self.input_size, self.input_size)
        self.f_gate = nn.Linear(self.input_size, self.input_size)
        self.z_gate = nn.Linear(self.input_size, self.input_size)
        self.ri_gate = nn.Linear(self.input_size, self.input_size, bias=False)
        self.rf_gate = nn.Linear(self.input_size, self.input_size, bias=False)
        self.rz_gate = nn.Linear(self.input_size, self.input_size, bias=False)
        self.ln_c = nn.LayerNorm(self.input_size)
        self.proj = nn.Linear(self.input_size, self.input_size)
        self.init_states(x_example)

    def init_states(self, x):
        self.ct_1 = torch.zeros(1, 1, x.shape[2], device=x.device)  # expect: GL106
        self.ht_1 = torch.zeros(1, 1, x.shape[2], device=x.device)  # expect: GL106

    def forward(self, x):
        x = self.ln(x)
        ht_1 = self.ht_1
        i = torch.sigmoid(self.i_gate(x) + self.ri_gate(ht_1))
        f = torch.sigmoid(self.f_gate(x) + self.rf_gate(ht_1))
        z = torch.tanh(self.z_gate(x) + self.rz_gate(ht_1))
        ct_1 = self.ct_1
        ct = f * ct_1 + i * z
        self.ct_1 = torch.mean(self.ln_c(ct), [0, 1], keepdim=True).detach()
        ht = torch.tanh(ct)
        self.ht_1 = torch.mean(ht, [0, 1], keepdim=True).detach()
        return self.proj(self.drop(ht)) + x


class xLSTM(nn.Module):
    def __init__(self, vocab, x_example, n_layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, x_example.shape[2])
        self.blocks = nn.ModuleList([sLSTMblock(x_example) for _ in range(n_layers)])
        self.head = nn.Linear(x_example.shape[2], vocab)

    def forward(self, idx):
        x = self.emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
batch_size, block_size, n_embd, vocab = 8, 6, 16, 12
x_example = torch.zeros(batch_size, block_size, n_embd)
model = xLSTM(vocab, x_example).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
data = torch.arange(200) % vocab

losses = []
for it in range(40):
    ix = torch.randint(len(data) - block_size - 1, (batch_size,))
    xb = torch.stack([data[i:i + block_size] for i in ix]).to(device)
    yb = torch.stack([data[i + 1:i + block_size + 1] for i in ix]).to(device)
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, vocab), yb.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
