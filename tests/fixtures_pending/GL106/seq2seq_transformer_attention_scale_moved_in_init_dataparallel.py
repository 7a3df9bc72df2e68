# source: https://github.com/bentrevett/pytorch-seq2seq/issues/4
# "arguments are located on different GPUs" with the seq2seq tutorials wrapped as
# `nn.DataParallel(model, device_ids=[0, 1], dim=...)`. The thread's diagnosis (notebook 6, the
# Transformer): "there are tensors like masks that's initiated in the init part of the module, and
# then send to the GPU immediately. This kind of model tensor stays in cuda:0 with the main model,
# while input is on other GPUs" - MultiHeadAttentionLayer.__init__ keeps
# `self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)` as a plain attribute,
# which DataParallel does not replicate, and the replica on the second GPU divides by it.
# Tiny encoder-only classifier on synthetic token sequences.
# fixture: static (written for a machine with two GPUs, like the report; `gpulint run --gpus 2` fails with "Expected all tensors to be on the same device"; CPU and one GPU train)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, device):
        super().__init__()
        self.hid_dim, self.n_heads = hid_dim, n_heads
        self.head_dim = hid_dim // n_heads
        self.fc_q = nn.Linear(hid_dim, hid_dim)
        self.fc_k = nn.Linear(hid_dim, hid_dim)
        self.fc_v = nn.Linear(hid_dim, hid_dim)
        self.fc_o = nn.Linear(hid_dim, hid_dim)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)  # expect: GL106

    def forward(self, query, key, value):
        batch_size = query.shape[0]
        Q = self.fc_q(query).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = self.fc_k(key).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = self.fc_v(value).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        x = torch.matmul(torch.softmax(energy, dim=-1), V).permute(0, 2, 1, 3).contiguous()
        return self.fc_o(x.view(batch_size, -1, self.hid_dim))


class EncoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, device):
        super().__init__()
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, device)
        self.norm1 = nn.LayerNorm(hid_dim)
        self.ff = nn.Sequential(nn.Linear(hid_dim, 2 * hid_dim), nn.ReLU(), nn.Linear(2 * hid_dim, hid_dim))
        self.norm2 = nn.LayerNorm(hid_dim)

    def forward(self, src):
        src = self.norm1(src + self.self_attention(src, src, src))
        return self.norm2(src + self.ff(src))


class Classifier(nn.Module):
    def __init__(self, vocab, hid_dim, n_heads, n_classes, device, max_length=32):
        super().__init__()
        self.tok_embedding = nn.Embedding(vocab, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layer = EncoderLayer(hid_dim, n_heads, device)
        self.out = nn.Linear(hid_dim, n_classes)

    def forward(self, src):
        batch_size, src_len = src.shape
        pos = torch.arange(0, src_len, device=src.device).unsqueeze(0).repeat(batch_size, 1)
        x = self.layer(self.tok_embedding(src) + self.pos_embedding(pos))
        return self.out(x.mean(dim=1))


def make_batch(g, vocab=16, seq_len=10, batch_size=32):
    src = torch.randint(1, vocab, (batch_size, seq_len), generator=g)
    return src, (src[:, 0] > vocab // 2).long()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Classifier(16, 32, 4, 2, device).to(device)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model, device_ids=[0, 1])
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(0)
losses = []
for step in range(60):
    src, label = make_batch(g)
    src, label = src.to(device), label.to(device)
    loss = criterion(model(src), label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
