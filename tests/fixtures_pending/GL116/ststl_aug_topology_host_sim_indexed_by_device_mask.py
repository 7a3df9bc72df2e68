# source: https://github.com/Echo-Ji/ST-SSL/issues/3
# ST-SSL's STSSL.forward() fetches the region similarity matrix through a helper method that
# returns `self.encoder.s_sim_mx.cpu()` (the sampling below needs numpy), then calls
# aug_topology(s_sim_mx, graph): there `edge_mask = (input_graph > 0).tril(diagonal=-1)` is made
# from the adjacency matrix on the GPU, and `sim_mx[edge_mask]` indexes the host matrix with a
# device mask. The maintainer confirmed the reporter's fix: `edge_mask = (...).tril(...).cpu()`.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import copy
import json

import numpy as np
import torch
import torch.nn as nn


def sim_global(emb):
    norm = torch.norm(emb, p=2, dim=1) ** -1
    sim = torch.einsum("nc,mc->nm", emb, emb)
    return sim * torch.einsum("i,j->ij", norm, norm)


def aug_topology(sim_mx, input_graph, percent=0.2):
    drop_percent = percent / 2
    index_list = input_graph.nonzero()
    edge_num = int(index_list.shape[0] / 2)
    edge_mask = (input_graph > 0).tril(diagonal=-1)
    add_drop_num = max(int(edge_num * drop_percent / 2), 1)
    aug_graph = copy.deepcopy(input_graph)

    drop_prob = torch.softmax(sim_mx[edge_mask], dim=0)  # expect: GL116
    drop_prob = (1.0 - drop_prob).detach().numpy().astype(np.float64)
    drop_prob /= drop_prob.sum()
    drop_list = np.random.choice(edge_num, size=add_drop_num, p=drop_prob)
    drop_index = index_list[drop_list]
    aug_graph[drop_index[:, 0], drop_index[:, 1]] = 0.0
    aug_graph[drop_index[:, 1], drop_index[:, 0]] = 0.0
    return aug_graph


class STEncoder(nn.Module):
    def __init__(self, num_nodes, d_in, d_model):
        super().__init__()
        self.node_emb = nn.Parameter(torch.randn(num_nodes, 8))
        self.proj = nn.Linear(d_in, d_model)
        self.s_sim_mx = None

    def forward(self, x, graph):
        self.s_sim_mx = sim_global(self.node_emb).detach()
        h = torch.relu(self.proj(x))
        return torch.einsum("vw,nwc->nvc", graph, h)


class STSSL(nn.Module):
    def __init__(self, num_nodes, d_in, d_model, percent=0.1):
        super().__init__()
        self.encoder = STEncoder(num_nodes, d_in, d_model)
        self.mlp = nn.Linear(d_model, d_in)
        self.percent = percent

    def forward(self, view1, graph):
        repr1 = self.encoder(view1, graph)
        s_sim_mx = self.fetch_spatial_sim()
        graph2 = aug_topology(s_sim_mx, graph, percent=self.percent * 2)
        repr2 = self.encoder(view1, graph2)
        return repr1, repr2

    def fetch_spatial_sim(self):
        return self.encoder.s_sim_mx.cpu()

    def predict(self, z1):
        return self.mlp(z1)


torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
num_nodes, d_in = 10, 2
adj = (torch.rand(num_nodes, num_nodes) > 0.5).float()
adj = torch.triu(adj, diagonal=1)
adj = adj + adj.t()
graph = adj.to(device)
model = STSSL(num_nodes, d_in, 16).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(32, num_nodes, d_in)
y = x.roll(1, dims=1)
xb, yb = x.to(device), y.to(device)
losses = []
for step in range(20):
    z1, z2 = model(xb, graph)
    loss = (model.predict(z1) - yb).pow(2).mean() + 0.1 * (z1 - z2).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
