# source: https://github.com/wyharveychen/CloserLookFewShot (methods/matchingnet.py,
# FullyContextualEmbedding and MatchingNet.cuda)
# Hard negative (engine-rooted false positive, benchmarks/PRECISION14.md E3): the fully contextual
# embedding keeps its LSTM cell's initial state as a plain tensor, `self.c_0 =
# Variable(torch.zeros(1, feat_dim))`, and overrides `cuda()` to move it (`super().cuda()`, then
# `self.c_0 = self.c_0.cuda()`); the few-shot model's own `cuda()` calls `self.FCE.cuda()`, and the
# training script moves the model with `model.cuda()`. The state is on the GPU whenever the cell is.
# Today GL116 reports `self.lstmcell(x, (h, c))`: the engine does not credit the override's move.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class FullyContextualEmbedding(nn.Module):
    def __init__(self, feat_dim):
        super().__init__()
        self.lstmcell = nn.LSTMCell(feat_dim * 2, feat_dim)
        self.softmax = nn.Softmax(dim=1)
        self.c_0 = Variable(torch.zeros(1, feat_dim))
        self.feat_dim = feat_dim

    def forward(self, f, G):
        h = f
        c = self.c_0.expand_as(f)
        G_T = G.transpose(0, 1)
        for k in range(G.size(0)):
            a = self.softmax(h.mm(G_T))
            r = a.mm(G)
            x = torch.cat((f, r), 1)
            h, c = self.lstmcell(x, (h, c))
            h = h + f
        return h

    def cuda(self):
        super().cuda()
        self.c_0 = self.c_0.cuda()
        return self


class MatchingNet(nn.Module):
    def __init__(self, feat_dim, n_way):
        super().__init__()
        self.n_way = n_way
        self.feature = nn.Sequential(nn.Linear(10, feat_dim), nn.ReLU())
        self.FCE = FullyContextualEmbedding(feat_dim)

    def forward(self, support, support_labels, query):
        G = F.normalize(self.feature(support), dim=1)
        f = self.FCE(self.feature(query), G)
        scores = F.normalize(f, dim=1).mm(G.t()) * 10
        one_hot = F.one_hot(support_labels, self.n_way).float()
        return (F.softmax(scores, dim=1).mm(one_hot) + 1e-6).log()

    def cuda(self):
        super().cuda()
        self.FCE = self.FCE.cuda()
        return self


torch.manual_seed(0)
use_cuda = torch.cuda.is_available()
model = MatchingNet(16, 3)
if use_cuda:
    model = model.cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
prototypes = torch.randn(3, 10) * 0.6
history = []
for episode in range(40):
    support_labels = torch.arange(3).repeat(5)
    query_labels = torch.arange(3).repeat(4)
    support = prototypes[support_labels] + 1.0 * torch.randn(15, 10)
    query = prototypes[query_labels] + 1.0 * torch.randn(12, 10)
    if use_cuda:
        support, support_labels, query, query_labels = support.cuda(), support_labels.cuda(), query.cuda(), query_labels.cuda()
    loss = F.nll_loss(model(support, support_labels, query), query_labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
device = "cuda" if use_cuda else "cpu"
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:3]) / 3, "last_loss": sum(history[-3:]) / 3, "device": device}))
