# source: https://github.com/gnn-tracking/gnn_tracking/pull/449
# gnn_tracking's EdgeWeightFocalLoss: when no pos_weight is given, __init__ sets
# `pos_weight = T([1.0])` (a one-element tensor on the host) and `self.save_hyperparameters()`
# stores it in `self.hparams`; _forward hands `self.hparams.pos_weight` to binary_focal_loss(),
# where `-alpha * pos_weight * probs_neg.pow(gamma) * target * probs_pos.log()` meets the edge
# weights on the GPU: "Expected all tensors to be on the same device". The PR builds the default
# in _forward with `torch.tensor([1.0], device=w.device)`. (The project drives training with
# Lightning; the loop here is a plain one around the same loss. HyperparametersMixin is a small
# stand-in for Lightning's.)
# fails-on-cuda: Expected all tensors to be on the same device
import inspect
import json
from abc import ABC, abstractmethod
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch import Tensor as T
from torch.nn.functional import binary_cross_entropy


class HyperparametersMixin:
    def save_hyperparameters(self):
        frame = inspect.currentframe().f_back
        init_args = {k: v for k, v in frame.f_locals.items() if k not in ("self", "kwargs", "__class__")}
        self.hparams = SimpleNamespace(**{**vars(getattr(self, "hparams", SimpleNamespace())), **init_args})


def binary_focal_loss(*, inpt, target, alpha=0.25, gamma=2.0, pos_weight=None):
    probs_pos = inpt.clamp(1e-6, 1 - 1e-6)
    probs_neg = 1 - probs_pos
    pos_term = -alpha * pos_weight * probs_neg.pow(gamma) * target * probs_pos.log()  # expect: GL116
    neg_term = -(1 - alpha) * probs_pos.pow(gamma) * (1.0 - target) * probs_neg.log()
    return torch.mean(pos_term + neg_term)


def falsify_low_pt_edges(*, y, edge_index, pt, pt_thld=0.0):
    if pt_thld == 0.0:
        return y
    return (y.bool() & (pt[edge_index[0, :]] > pt_thld)).long()


class FalsifyLowPtEdgeWeightLoss(nn.Module, ABC, HyperparametersMixin):
    def __init__(self, *, pt_thld: float = 0.0):
        super().__init__()
        self.save_hyperparameters()

    def forward(self, *, w, y, edge_index=None, pt=None, **kwargs):
        y = falsify_low_pt_edges(y=y, edge_index=edge_index, pt=pt, pt_thld=self.hparams.pt_thld)
        return self._forward(y=y.float(), w=w)

    @abstractmethod
    def _forward(self, *, w, y, **kwargs):
        pass


class EdgeWeightBCELoss(FalsifyLowPtEdgeWeightLoss):
    @staticmethod
    def _forward(*, w, y, **kwargs):
        return binary_cross_entropy(w, y, reduction="mean")


class EdgeWeightFocalLoss(FalsifyLowPtEdgeWeightLoss):
    def __init__(self, *, alpha=0.25, gamma=2.0, pos_weight=None, **kwargs):
        super().__init__(**kwargs)
        if pos_weight is None:
            pos_weight = T([1.0])
        self.save_hyperparameters()

    def _forward(self, *, w, y, **kwargs):
        return binary_focal_loss(
            inpt=w,
            target=y,
            alpha=self.hparams.alpha,
            gamma=self.hparams.gamma,
            pos_weight=self.hparams.pos_weight,
        )


class EdgeClassifier(nn.Module):
    def __init__(self, node_dim=4, hidden=16):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2 * node_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x, edge_index):
        return torch.sigmoid(self.mlp(torch.cat([x[edge_index[0]], x[edge_index[1]]], dim=1))).squeeze(1)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = EdgeClassifier().to(device)
loss_fct = EdgeWeightFocalLoss(alpha=0.25, gamma=2.0)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
graphs = []
for _ in range(4):
    x = torch.randn(30, 4)
    edge_index = torch.randint(0, 30, (2, 60))
    y = ((x[edge_index[0], 0] > 0) == (x[edge_index[1], 0] > 0)).long()
    graphs.append((x, edge_index, y))
losses = []
for epoch in range(4):
    for x, edge_index, y in graphs:
        x, edge_index, y = x.to(device), edge_index.to(device), y.to(device)
        w = model(x, edge_index)
        loss = loss_fct(w=w, y=y, edge_index=edge_index)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
