# source: https://github.com/nyu-mll/jiant/pull/776
# The Winograd span-classification task turns predictions into one-hot rows in a nested helper,
# `ones = torch.sparse.torch.eye(depth).cuda()`. The rest of the script picks its device with a CPU
# fallback, but this helper always asks for CUDA: on a machine without a GPU the first metric
# update raises ("Torch not compiled with CUDA enabled" / "Found no NVIDIA driver"), which the PR
# fixes by guarding the move with `torch.cuda.is_available()`. (CPU-only crash: no fails-on-cuda
# header; the run trains on a GPU.)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class SpanClassifier(nn.Module):
    def __init__(self, vocab=32, dim=16, n_classes=2):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.proj = nn.Linear(2 * dim, n_classes)

    def forward(self, span1, span2):
        return self.proj(torch.cat([self.emb(span1), self.emb(span2)], dim=-1))


class WinogradCoreferenceTask:
    def __init__(self):
        self.n_correct = 0
        self.n_total = 0

    def update_metrics(self, logits, labels):
        def make_one_hot(batch, depth=2):
            ones = torch.sparse.torch.eye(depth).cuda()  # expect: GL102
            return ones.index_select(0, batch)

        binary_preds = make_one_hot(logits.argmax(dim=-1), depth=2)
        self.n_correct += int((binary_preds.argmax(dim=-1) == labels).sum())
        self.n_total += labels.numel()

    def accuracy(self):
        return self.n_correct / max(self.n_total, 1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SpanClassifier().to(device)
task = WinogradCoreferenceTask()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
span1 = torch.randint(0, 32, (64, 3))
span2 = torch.randint(0, 32, (64, 3))
labels = (span1[:, 0] % 2 == span2[:, 0] % 2).long()
losses = []
for epoch in range(20):
    for i in range(0, 64, 16):
        s1, s2, y = span1[i:i + 16].to(device), span2[i:i + 16].to(device), labels[i:i + 16].to(device)
        logits = model(s1, s2)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        task.update_metrics(logits.detach(), y)
        losses.append(loss.item())
print("accuracy", round(task.accuracy(), 3))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
