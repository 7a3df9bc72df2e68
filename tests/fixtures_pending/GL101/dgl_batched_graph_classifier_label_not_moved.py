# source: https://github.com/dmlc/dgl/issues/486
# The reporter ports DGL's batched graph classification tutorial to one GPU: the collate function
# batches the graphs and returns `torch.tensor(labels)`, the classifier is moved to the device and
# each batched graph is moved before the model call, but the labels are not, so
# `loss_func(prediction, label)` raises "Expected object of backend CUDA but got backend CPU for
# argument #2 'target'" (the maintainers: move `label` to cuda as well). No DGL here: a small
# batched-graph class with a block-diagonal adjacency stands in for `dgl.batch`.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader

torch.manual_seed(0)


class BatchedGraph:
    def __init__(self, adj, graph_id, num_graphs):
        self.adj = adj
        self.graph_id = graph_id
        self.num_graphs = num_graphs

    def in_degrees(self):
        return self.adj.sum(dim=1)

    def to(self, device):
        return BatchedGraph(self.adj.to(device), self.graph_id.to(device), self.num_graphs)


def make_graph(kind, n):
    adj = torch.zeros(n, n)
    for i in range(n):
        if kind == 0:  # a cycle
            adj[i, (i + 1) % n] = adj[(i + 1) % n, i] = 1.0
        elif i > 0:  # a star
            adj[0, i] = adj[i, 0] = 1.0
    return adj


class MiniGCDataset(torch.utils.data.Dataset):
    def __init__(self, num_graphs):
        g = torch.Generator().manual_seed(1)
        self.samples = []
        for i in range(num_graphs):
            n = int(torch.randint(4, 8, (1,), generator=g))
            self.samples.append((make_graph(i % 2, n), i % 2))
        self.num_classes = 2

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        return self.samples[idx]


def batch(graphs):
    sizes = [g.shape[0] for g in graphs]
    adj = torch.block_diag(*graphs)
    graph_id = torch.cat([torch.full((n,), i, dtype=torch.long) for i, n in enumerate(sizes)])
    return BatchedGraph(adj, graph_id, len(graphs))


def collate(samples):
    graphs, labels = map(list, zip(*samples))
    batched_graph = batch(graphs)
    return batched_graph, torch.tensor(labels)


class GCNLayer(nn.Module):
    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = nn.Linear(in_feats, out_feats)

    def forward(self, g, feature):
        h = g.adj @ feature
        return self.linear(h)


class Classifier(nn.Module):
    def __init__(self, in_dim, hidden_dim, n_classes):
        super().__init__()
        self.layers = nn.ModuleList([GCNLayer(in_dim, hidden_dim), GCNLayer(hidden_dim, hidden_dim)])
        self.classify = nn.Linear(hidden_dim, n_classes)

    def forward(self, g):
        h = g.in_degrees().view(-1, 1).float()
        for conv in self.layers:
            h = F.relu(conv(g, h))
        sums = torch.zeros(g.num_graphs, h.shape[1], device=h.device).index_add_(0, g.graph_id, h)
        counts = torch.bincount(g.graph_id, minlength=g.num_graphs).clamp(min=1).unsqueeze(1)
        hg = sums / counts
        return self.classify(hg)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainset = MiniGCDataset(64)
data_loader = DataLoader(trainset, batch_size=16, shuffle=True, collate_fn=collate)
model = Classifier(1, 32, trainset.num_classes)
model.to(device)
loss_func = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=0.01)
model.train()
epoch_losses = []
for epoch in range(15):
    epoch_loss = 0
    for iter, (bg, label) in enumerate(data_loader):
        bg = bg.to(device)
        prediction = model(bg)
        loss = loss_func(prediction, label)  # expect: GL101
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.detach().item()
    epoch_loss /= iter + 1
    epoch_losses.append(epoch_loss)
print("GPULINT-TRAIN " + json.dumps({"first_loss": epoch_losses[0], "last_loss": epoch_losses[-1], "device": device.type}))
