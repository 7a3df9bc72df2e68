# source: https://github.com/HobbitLong/PyContrast/blob/84f94eabec4f/pycontrast/memory/mem_moco.py
# PyContrast's MoCo memory: `RGBMoCo.__init__` registers the negative queue as a buffer
# (`register_buffer('memory', torch.randn(K, n_dim))`) and then normalises it in place of itself,
# `self.memory = F.normalize(self.memory)`. Assigning a tensor to the name of a registered buffer
# goes through `nn.Module.__setattr__`, which stores it in `_buffers`: `memory` stays a buffer and
# moves with the module (`contrast.cuda()` in the trainer). The base class's `_update_memory(k,
# queue)` writes the keys of each step into that buffer with `queue.index_copy_(0, out_ids, k)`,
# `out_ids` made on the accelerator. Every operand is on the device: GL116 must be silent (P42-2).
# (The ResNet encoders are replaced by a tiny MLP and its momentum copy; synthetic two-view data;
# the trainer's `.cuda()` calls become `.to(device)`.)
import copy
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class BaseMoCo(nn.Module):
    """base class for MoCo-style memory cache"""

    def __init__(self, K=256, T=0.07):
        super().__init__()
        self.K = K
        self.T = T
        self.index = 0

    def _update_pointer(self, bsz):
        self.index = (self.index + bsz) % self.K

    def _update_memory(self, k, queue):
        with torch.no_grad():
            num_neg = k.shape[0]
            out_ids = torch.arange(num_neg).to(device)
            out_ids = torch.fmod(out_ids + self.index, self.K).long()
            queue.index_copy_(0, out_ids, k)

    def _compute_logit(self, q, k, queue):
        bsz = q.shape[0]
        pos = torch.bmm(q.view(bsz, 1, -1), k.view(bsz, -1, 1)).view(bsz, 1)
        neg = torch.mm(queue, q.transpose(1, 0)).transpose(0, 1)
        out = torch.cat((pos, neg), dim=1)
        return torch.div(out, self.T).squeeze().contiguous()


class RGBMoCo(BaseMoCo):
    """single-view MoCo cache"""

    def __init__(self, n_dim, K=256, T=0.07):
        super().__init__(K, T)
        self.register_buffer("memory", torch.randn(K, n_dim))
        self.memory = F.normalize(self.memory)

    def forward(self, q, k):
        bsz = q.size(0)
        k = k.detach()
        queue = self.memory.clone().detach()
        logits = self._compute_logit(q, k, queue)
        labels = torch.zeros(bsz, dtype=torch.long, device=q.device)
        self._update_memory(k, self.memory)
        self._update_pointer(k.size(0))
        return logits, labels


def momentum_update(model, model_ema, m=0.99):
    for p, p_ema in zip(model.parameters(), model_ema.parameters()):
        p_ema.data.mul_(m).add_(p.detach().data, alpha=1 - m)


def two_views(n, g):
    base = torch.randn(n, 16, generator=g)
    return base + 0.1 * torch.randn(n, 16, generator=g), base + 0.1 * torch.randn(n, 16, generator=g)


if __name__ == "__main__":
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)).to(device)
    model_ema = copy.deepcopy(model)
    contrast = RGBMoCo(8, K=256, T=0.2)
    contrast = contrast.to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    losses = []
    for step in range(150):
        x1, x2 = two_views(32, g)
        x1, x2 = x1.to(device), x2.to(device)
        q = F.normalize(model(x1), dim=1)
        with torch.no_grad():
            k = F.normalize(model_ema(x2), dim=1)
        logits, labels = contrast(q, k)
        loss = criterion(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        momentum_update(model, model_ema)
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:10]) / 10, "last_loss": sum(losses[-10:]) / 10, "device": device.type}))
