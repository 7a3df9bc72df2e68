# source: https://github.com/xiaxin1998/DHCN/issues/14
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
# The hypergraph convolution collects each layer's item embeddings in a Python list and averages
# them with np.sum(final, 0) inside forward(); on the GPU the list holds CUDA tensors and NumPy
# cannot convert them.
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class HyperConv(nn.Module):
    def __init__(self, layers, emb_size=16):
        super().__init__()
        self.layers = layers
        self.emb_size = emb_size

    def forward(self, adjacency, embedding):
        item_embeddings = embedding
        final = [item_embeddings]
        for i in range(self.layers):
            item_embeddings = torch.sparse.mm(adjacency, item_embeddings)
            final.append(item_embeddings)
        item_embeddings = np.sum(final, 0) / (self.layers + 1)  # expect: GL109
        return item_embeddings


class DHCN(nn.Module):
    def __init__(self, adjacency, n_node, emb_size=16, layers=2):
        super().__init__()
        self.adjacency = adjacency
        self.embedding = nn.Embedding(n_node, emb_size)
        self.HyperGraph = HyperConv(layers, emb_size)

    def forward(self, session_item):
        item_embeddings_hg = self.HyperGraph(self.adjacency, self.embedding.weight)
        sess = item_embeddings_hg[session_item].mean(dim=1)
        return sess @ item_embeddings_hg.t()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
n_node = 30
idx = torch.randint(0, n_node, (2, 90))
adjacency = torch.sparse_coo_tensor(idx, torch.full((90,), 0.2), (n_node, n_node)).coalesce().to(device)
sessions = torch.randint(0, n_node, (256, 4))
targets = sessions[:, -1]
loader = DataLoader(TensorDataset(sessions, targets), batch_size=32, shuffle=True)
model = DHCN(adjacency, n_node).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(4):
    for sess, tar in loader:
        sess, tar = sess.to(device), tar.to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(sess), tar)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
