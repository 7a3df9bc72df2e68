# source: https://github.com/mahmoodlab/MIL-Lab/issues/4
# MIL-Lab's test_models.py builds a CLAM_SB model whose instance-level loss is smooth-topk's
# `SmoothTop1SVM(n_classes=2)` (kept on the model as `self.instance_loss_fn`), moves the model with
# `model.to(device)` and the bag and label too, and calls `model.forward(...)`. The loss registers
# its class indices as a buffer, but its `__init__` also hands that tensor to `get_losses()`, which
# builds the loss closures `Top1_Smooth_SVM(self.labels, ...)` around the CPU tensor; `.to()` moves
# the buffer and leaves the closures' copy behind (only the class's own `cuda()` override rebuilds
# them). The first instance loss fails in `delta(y, labels)`: "Expected all tensors to be on the
# same device, but found at least two devices, cuda:0 and cpu!" (also smooth-topk#16).
# (UNI/CONCH features are stood in for by random bags whose label shifts the top patches; smooth-topk's
# LogSumExp by torch.logsumexp.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def delta(y, labels, alpha=None):
    """Compute zero-one loss matrix for a vector of ground truth y."""
    d = torch.ne(y[:, None], labels[None, :]).float()  # expect: GL116
    if alpha is not None:
        d = alpha * d
    return d


def Top1_Hard_SVM(labels, alpha=1.0):
    def fun(x, y):
        max_, _ = (x + delta(y, labels, alpha)).max(1)
        return max_ - x.gather(1, y[:, None]).squeeze()
    return fun


def Top1_Smooth_SVM(labels, tau, alpha=1.0):
    def fun(x, y):
        x = x + delta(y, labels, alpha) - x.gather(1, y[:, None])
        return tau * torch.logsumexp(x / tau, dim=1)
    return fun


class _SVMLoss(nn.Module):
    def __init__(self, n_classes, alpha):
        super(_SVMLoss, self).__init__()
        self.alpha = alpha if alpha is not None else 1
        self.register_buffer("labels", torch.from_numpy(np.arange(n_classes)))
        self.n_classes = n_classes

    def cuda(self, device=None):
        nn.Module.cuda(self, device)
        self.get_losses()
        return self


class SmoothTop1SVM(_SVMLoss):
    def __init__(self, n_classes, alpha=None, tau=1.0):
        super(SmoothTop1SVM, self).__init__(n_classes=n_classes, alpha=alpha)
        self.tau = tau
        self.get_losses()

    def forward(self, x, y):
        return self.F_s(x, y).sum() / x.size(0)

    def get_losses(self):
        self.F_h = Top1_Hard_SVM(self.labels, self.alpha)
        self.F_s = Top1_Smooth_SVM(self.labels, self.tau, self.alpha)


class GlobalGatedAttention(nn.Module):
    def __init__(self, L, D, dropout=0.0):
        super().__init__()
        self.attention_a = nn.Sequential(nn.Linear(L, D), nn.Tanh(), nn.Dropout(dropout))
        self.attention_b = nn.Sequential(nn.Linear(L, D), nn.Sigmoid(), nn.Dropout(dropout))
        self.attention_c = nn.Linear(D, 1)

    def forward(self, x):
        return self.attention_c(self.attention_a(x) * self.attention_b(x))


class CLAMSB(nn.Module):
    def __init__(self, in_dim=32, embed_dim=16, attention_dim=8, num_classes=2, k_sample=4, bag_weight=0.7):
        super().__init__()
        self.k_sample = k_sample
        self.num_classes = num_classes
        self.bag_weight = bag_weight
        self.patch_embed = nn.Sequential(nn.Linear(in_dim, embed_dim), nn.ReLU())
        self.global_attn = GlobalGatedAttention(L=embed_dim, D=attention_dim)
        self.classifier = nn.Linear(embed_dim, num_classes)
        self.instance_classifiers = nn.ModuleList([nn.Linear(embed_dim, 2) for _ in range(num_classes)])
        self.instance_loss_fn = SmoothTop1SVM(n_classes=2)

    @staticmethod
    def create_positive_targets(length, device):
        return torch.full((length,), 1, device=device).long()

    @staticmethod
    def create_negative_targets(length, device):
        return torch.full((length,), 0, device=device).long()

    def inst_eval(self, A, h, classifier):
        top_p_ids = torch.topk(A, self.k_sample)[1][-1]
        top_p = torch.index_select(h, dim=0, index=top_p_ids)
        top_n_ids = torch.topk(-A, self.k_sample, dim=1)[1][-1]
        top_n = torch.index_select(h, dim=0, index=top_n_ids)
        p_targets = self.create_positive_targets(self.k_sample, h.device)
        n_targets = self.create_negative_targets(self.k_sample, h.device)
        all_targets = torch.cat([p_targets, n_targets], dim=0)
        logits = classifier(torch.cat([top_p, top_n], dim=0))
        return self.instance_loss_fn(logits, all_targets)

    def forward(self, h, label=None, loss_fn=None):
        h = self.patch_embed(h.squeeze(0))
        A = torch.transpose(self.global_attn(h), 1, 0)
        M = torch.mm(F.softmax(A, dim=-1), h)
        logits = self.classifier(M)
        inst_labels = F.one_hot(label, num_classes=self.num_classes).squeeze(0)
        total_inst_loss = 0.0
        for i in range(len(self.instance_classifiers)):
            if inst_labels[i].item() == 1:
                total_inst_loss += self.inst_eval(A, h, self.instance_classifiers[i])
        loss = loss_fn(logits, label) * self.bag_weight + (1 - self.bag_weight) * total_inst_loss
        return {"logits": logits, "loss": loss}, {"loss": loss.item()}


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loss_fn = nn.CrossEntropyLoss()
    model = CLAMSB(num_classes=2)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    bags = torch.randn(16, 1, 40, 32)
    labels = torch.randint(0, 2, (16, 1))
    bags[:, :, :6] += labels.view(16, 1, 1, 1).float() * 1.5
    losses = []
    for epoch in range(3):
        for sample_data, label in zip(bags, labels):
            sample_data = sample_data.to(device)
            label = label.to(device)
            results_dict, log_dict = model.forward(sample_data, label=label, loss_fn=loss_fn)
            optimizer.zero_grad()
            results_dict["loss"].backward()
            optimizer.step()
            losses.append(log_dict["loss"])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:16]) / 16, "last_loss": sum(losses[-16:]) / 16, "device": device.type}))


if __name__ == "__main__":
    main()
