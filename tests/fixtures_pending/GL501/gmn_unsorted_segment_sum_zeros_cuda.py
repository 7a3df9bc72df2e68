# source: https://github.com/Lin-Yijie/Graph-Matching-Networks/pull/5
# segment.py's unsorted_segment_sum(data, segment_ids, num_segments) (called by graph_prop_once in
# every propagation layer and by GraphAggregator.forward) built its output with
# `torch.zeros(*shape).cuda().scatter_add(0, segment_ids, data)` and the repeat count with
# `torch.prod(torch.tensor(data.shape[1:])).long().cuda()`: a host tensor made and copied to the GPU
# on every call, a CPU bottleneck of the training step. The PR creates them with
# `device=data.device`. train.py picks `device = torch.device('cuda:0' if use_cuda else 'cpu')`.
import json

import torch
import torch.nn as nn


def unsorted_segment_sum(data, segment_ids, num_segments):
    if len(segment_ids.shape) == 1:
        s = torch.prod(torch.tensor(data.shape[1:])).long().cuda()
        segment_ids = segment_ids.repeat_interleave(s).view(segment_ids.shape[0], *data.shape[1:])
    shape = [num_segments] + list(data.shape[1:])
    tensor = torch.zeros(*shape).cuda().scatter_add(0, segment_ids, data)  # expect: GL501
    tensor = tensor.type(data.dtype)
    return tensor


def graph_prop_once(node_states, from_idx, to_idx, message_net):
    from_states = node_states[from_idx]
    to_states = node_states[to_idx]
    messages = message_net(torch.cat([from_states, to_states], dim=-1))
    return unsorted_segment_sum(messages, to_idx, node_states.shape[0])


class GraphPropLayer(nn.Module):
    def __init__(self, node_state_dim):
        super().__init__()
        self._message_net = nn.Sequential(nn.Linear(2 * node_state_dim, node_state_dim), nn.ReLU())
        self._node_update = nn.GRUCell(node_state_dim, node_state_dim)

    def forward(self, node_states, from_idx, to_idx):
        aggregated = graph_prop_once(node_states, from_idx, to_idx, self._message_net)
        return self._node_update(aggregated, node_states)


class GraphAggregator(nn.Module):
    def __init__(self, node_state_dim, graph_dim):
        super().__init__()
        self.MLP1 = nn.Linear(node_state_dim, 2 * graph_dim)
        self.graph_dim = graph_dim

    def forward(self, node_states, graph_idx, n_graphs):
        node_states_g = self.MLP1(node_states)
        gates = torch.sigmoid(node_states_g[:, : self.graph_dim])
        node_states_g = node_states_g[:, self.graph_dim:] * gates
        return unsorted_segment_sum(node_states_g, graph_idx, n_graphs)


class GraphEmbeddingNet(nn.Module):
    def __init__(self, node_feature_dim, node_state_dim=16, graph_dim=8, n_prop_layers=2):
        super().__init__()
        self._encoder = nn.Linear(node_feature_dim, node_state_dim)
        self._prop_layers = nn.ModuleList([GraphPropLayer(node_state_dim) for _ in range(n_prop_layers)])
        self._aggregator = GraphAggregator(node_state_dim, graph_dim)
        self._head = nn.Linear(graph_dim, 1)

    def forward(self, node_features, from_idx, to_idx, graph_idx, n_graphs):
        node_states = self._encoder(node_features)
        for layer in self._prop_layers:
            node_states = layer(node_states, from_idx, to_idx)
        return self._head(self._aggregator(node_states, graph_idx, n_graphs)).squeeze(-1)


def make_batch(g, n_graphs=8, n_nodes=5):
    node_features = torch.randn(n_graphs * n_nodes, 4, generator=g)
    ring = torch.arange(n_nodes)
    from_idx = torch.cat([ring + k * n_nodes for k in range(n_graphs)])
    to_idx = torch.cat([(ring + 1) % n_nodes + k * n_nodes for k in range(n_graphs)])
    graph_idx = torch.arange(n_graphs).repeat_interleave(n_nodes)
    labels = node_features[:, 0].view(n_graphs, n_nodes).sum(1)
    return node_features, from_idx, to_idx, graph_idx, labels


use_cuda = torch.cuda.is_available()
device = torch.device("cuda:0" if use_cuda else "cpu")
torch.manual_seed(0)
model = GraphEmbeddingNet(node_feature_dim=4)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
model.to(device)
g = torch.Generator().manual_seed(0)
batches = [make_batch(g) for _ in range(4)]
losses = []
for i_iter in range(40):
    node_features, from_idx, to_idx, graph_idx, labels = batches[i_iter % 4]
    pred = model(node_features.to(device), from_idx.to(device), to_idx.to(device), graph_idx.to(device), 8)
    loss = ((pred - labels.to(device)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
