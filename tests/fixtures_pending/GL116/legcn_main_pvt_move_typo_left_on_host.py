# source: https://github.com/ycq091044/LEGCN/issues/1
# LEGCN's src/main.py (line-expansion GCN for hypergraphs): `load_data()` returns the line-graph
# adjacency, the projection `PvT` back onto the vertices, the features, labels and index splits as
# host tensors; a module-level `if args.cuda:` block moves them one by one, but the projection is
# written `Pvp = PvT.cuda()`, so `PvT` itself stays on the CPU. `train(model, epoch)` and
# `test(model)` read the module-level tensors and call `model(features, adj, PvT)`; the model is
# moved with `model.cuda()` under the same flag, so on a GPU machine the projection inside
# `forward` meets CUDA features ("something wrong when adj.cuda()"). Here: a two-layer GCN on the
# line graph of a small synthetic hypergraph, projected back onto the vertices.
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def load_data(num_vertices=60, num_edges=24, num_feats=16, num_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, size=num_vertices)
    centers = rng.normal(size=(num_classes, num_feats))
    vertex_feats = centers[labels] + 0.5 * rng.normal(size=(num_vertices, num_feats))
    pairs = []
    for e in range(num_edges):
        members = rng.choice(num_vertices, size=4, replace=False)
        pairs.extend((v, e) for v in members)
    # line expansion: one line-graph node per (vertex, hyperedge) pair
    m = len(pairs)
    adj = np.eye(m)
    for i, (vi, ei) in enumerate(pairs):
        for j, (vj, ej) in enumerate(pairs):
            if i != j and (vi == vj or ei == ej):
                adj[i, j] = 1.0
    adj = adj / adj.sum(1, keepdims=True)
    pv = np.zeros((m, num_vertices))
    for i, (v, _) in enumerate(pairs):
        pv[i, v] = 1.0
    pvt = pv.T / np.maximum(pv.T.sum(1, keepdims=True), 1.0)
    features = torch.FloatTensor(pv @ vertex_feats)
    perm = rng.permutation(num_vertices)
    idx_train, idx_val, idx_test = perm[:30], perm[30:45], perm[45:]
    return (torch.FloatTensor(adj), torch.FloatTensor(pvt), features, torch.LongTensor(labels),
            torch.LongTensor(idx_train), torch.LongTensor(idx_val), torch.LongTensor(idx_test))


def accuracy(output, labels):
    return (output.max(1)[1] == labels).float().mean()


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, adj):
        return torch.mm(adj, self.linear(x))


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj, PvT):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(torch.mm(PvT, x), dim=1)


parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=200)
parser.add_argument("--epochs", type=int, default=60)
parser.add_argument("--lr", type=float, default=0.02)
parser.add_argument("--weight_decay", type=float, default=5e-4)
parser.add_argument("--hidden", type=int, default=32)
parser.add_argument("--dropout", type=float, default=0.3)
args = parser.parse_args()
args.cuda = torch.cuda.is_available()

np.random.seed(args.seed)
torch.manual_seed(args.seed)

adj, PvT, features, labels, idx_train, idx_val, idx_test = load_data()

if args.cuda:
    features = features.cuda()
    adj = adj.cuda()
    Pvp = PvT.cuda()
    labels = labels.cuda()
    idx_train = idx_train.cuda()
    idx_val = idx_val.cuda()
    idx_test = idx_test.cuda()

losses = []


def train(model, epoch):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj, PvT)  # expect: GL116
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()
    losses.append(loss_train.item())


def test(model):
    model.eval()
    with torch.no_grad():
        output = model(features, adj, PvT)  # expect: GL116
    return accuracy(output[idx_test], labels[idx_test]).item()


model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=int(labels.max().item()) + 1, dropout=args.dropout)
if args.cuda:
    model.cuda()
optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

for epoch in range(args.epochs):
    train(model, epoch)
test(model)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": "cuda" if args.cuda else "cpu"}))
