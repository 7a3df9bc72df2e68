# source: https://github.com/pyg-team/pytorch_geometric/issues/5028
# PyTorch Geometric user script (a pooling graph classifier): `train(epoch)` moves every batch with
# `data = data.to(device)` before `model(data)`, but `test(loader)`, called on the train and the
# test loaders after each epoch, has the move commented out (`data = data#.to(device)`), so the
# first evaluation feeds a host batch object to the model on the GPU: "Expected all tensors to be
# on the same device, but found at least two devices, cuda:0 and cpu! (... wrapper__index_select)".
# (PyG's `Data`/`Batch` and `DataLoader` are replaced by a small graph class with `.to()` and a
# collate function; the clique pooling by a mean over each graph's nodes; synthetic graphs.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


class Graph:
    def __init__(self, x, edge_index, y, batch=None):
        self.x, self.edge_index, self.y = x, edge_index, y
        self.batch = batch if batch is not None else torch.zeros(x.size(0), dtype=torch.long)
        self.num_graphs = int(self.batch.max()) + 1

    def to(self, device):
        return Graph(self.x.to(device), self.edge_index.to(device), self.y.to(device), self.batch.to(device))


def collate(graphs):
    xs, edges, ys, batch, offset = [], [], [], [], 0
    for i, g in enumerate(graphs):
        xs.append(g.x)
        edges.append(g.edge_index + offset)
        ys.append(g.y)
        batch.append(torch.full((g.x.size(0),), i, dtype=torch.long))
        offset += g.x.size(0)
    return Graph(torch.cat(xs), torch.cat(edges, dim=1), torch.cat(ys), torch.cat(batch))


def make_graph(label, n=6):
    x = torch.randn(n, 4) + label
    src = torch.arange(n)
    edge_index = torch.stack([torch.cat([src, (src + 1) % n]), torch.cat([(src + 1) % n, src])])
    return Graph(x, edge_index, torch.tensor([label]))


class Net(nn.Module):
    def __init__(self, num_features=4, hidden=16, num_classes=2):
        super().__init__()
        self.lin1 = nn.Linear(num_features, hidden)
        self.lin2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, num_classes)

    def forward(self, data):
        x = F.relu(self.lin1(data.x))
        agg = torch.zeros_like(x).index_add_(0, data.edge_index[1], x[data.edge_index[0]])
        x = F.relu(self.lin2(x + agg))
        pooled = torch.zeros(data.num_graphs, x.size(1), device=x.device).index_add_(0, data.batch, x)
        counts = torch.bincount(data.batch, minlength=data.num_graphs).clamp(min=1).unsqueeze(1)
        return F.log_softmax(self.out(pooled / counts), dim=1)


torch.manual_seed(0)
dataset = [make_graph(i % 2) for i in range(96)]
train_dataset, test_dataset = dataset[:64], dataset[64:]
train_loader = DataLoader(train_dataset, batch_size=16, shuffle=True, collate_fn=collate)
test_loader = DataLoader(test_dataset, batch_size=16, collate_fn=collate)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.001)


def train(epoch):
    model.train()
    loss_all = 0
    for data in train_loader:
        data = data.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, data.y.to(device))
        loss.backward()
        loss_all += data.num_graphs * loss.item()
        optimizer.step()
    return loss_all / len(train_dataset)


def test(loader):
    model.eval()
    correct = 0
    for data in loader:
        data = data  # .to(device)
        pred = model(data).max(dim=1)[1]  # expect: GL101, GL403
        correct += pred.eq(data.y).sum().item()
    return correct / len(loader.dataset)


losses = []
for epoch in range(1, 6):
    loss = train(epoch)
    train_acc = test(train_loader)
    test_acc = test(test_loader)
    losses.append(loss)
    print("Epoch: {:03d}, Loss: {:.5f}, Train Acc: {:.5f}, Test Acc: {:.5f}".format(epoch, loss, train_acc, test_acc))

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
