# source: https://github.com/wengong-jin/hgraph2graph/pull/35
# train_generator.py builds `model = HierVAE(args).cuda()`; every step the model returns
# `loss, kl_div, wacc, iacc, tacc, sacc` (kl_div a Python float, the four accuracies 0-dim tensors
# on the GPU), and the script keeps running means with
# `meters = meters + np.array([kl_div, loss.item(), wacc * 100, iacc * 100, tacc * 100, sacc * 100])`.
# NumPy converts each device tensor and raises "can't convert cuda:0 device type tensor to numpy.
# Use Tensor.cpu() to copy the tensor to host memory first." (the PR adds `.cpu()` to each).
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler

torch.manual_seed(0)


class HierVAE(nn.Module):
    def __init__(self, vocab_size=6, hidden=16, latent=4):
        super().__init__()
        self.encoder = nn.Linear(vocab_size, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.word_head = nn.Linear(latent, vocab_size)
        self.topo_head = nn.Linear(latent, 2)

    def forward(self, words, topo, beta=0.0):
        h = torch.relu(self.encoder(nn.functional.one_hot(words, 6).float()))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        kl = -0.5 * torch.mean(1 + logvar - mu * mu - torch.exp(logvar))
        word_logits = self.word_head(z)
        topo_logits = self.topo_head(z)
        loss = nn.functional.cross_entropy(word_logits, words) + nn.functional.cross_entropy(topo_logits, topo)
        wacc = (word_logits.argmax(-1) == words).float().mean()
        tacc = (topo_logits.argmax(-1) == topo).float().mean()
        return loss + beta * kl, kl.item(), wacc, wacc.clone(), tacc, tacc.clone()


device = "cuda" if torch.cuda.is_available() else "cpu"
model = HierVAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-2)
scheduler = lr_scheduler.ExponentialLR(optimizer, 0.9)
grad_norm = lambda m: math.sqrt(sum([p.grad.norm().item() ** 2 for p in m.parameters() if p.grad is not None]))

words = torch.randint(0, 6, (64,))
topo = (words % 2 == 0).long()
dataset = [(words[i:i + 16].to(device), topo[i:i + 16].to(device)) for i in range(0, 64, 16)]
meters = np.zeros(6)
losses = []
total_step = 0
beta = 0.0
for epoch in range(6):
    for batch in dataset:
        total_step += 1
        model.zero_grad()
        loss, kl_div, wacc, iacc, tacc, sacc = model(*batch, beta=beta)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        meters = meters + np.array([kl_div, loss.item(), wacc * 100, iacc * 100, tacc * 100, sacc * 100])  # expect: GL109
        losses.append(loss.item())
        if total_step % 8 == 0:
            meters /= 8
            print("[%d] KL: %.2f, loss: %.3f, Word: %.2f, Topo: %.2f, GNorm: %.2f"
                  % (total_step, meters[0], meters[1], meters[2], meters[4], grad_norm(model)))
            meters *= 0
    scheduler.step()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
