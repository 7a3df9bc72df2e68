# Hard negative (real shape: Shen-Lab/GraphCL,
# https://github.com/Shen-Lab/GraphCL/blob/b4d7501a2090f94ca0871beb4ec97bf071eaed0f/adversarialRobustness_Component/code/common/dnn.py
# lines 103-127): a structure2vec graph classifier builds its labels and node features on the host in
# `PrepareFeatureLabel` (`labels = torch.LongTensor(len(batch_graph))`, filled item by item), and
# `forward` moves both with `.cuda()` only `if cmd_args.ctx == 'gpu':`, the option that also puts the
# model on the GPU. On either setting everything meets on one device. Pending: GL105 reports the
# `torch.LongTensor(...)` at line 54 and the `torch.zeros(...)` at line 61 (PRECISION18 A1:
# ModuleFacts does not read an options test as a device choice, so the unmoved branch's host
# tensors are joined in and "meet" the model's device). Check a copy outside `tests/`.
# fixture: cpu-only
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

cmd_opt = argparse.ArgumentParser(description="Argparser for the graph classifier")
cmd_opt.add_argument("-ctx", type=str, default="cpu", help="cpu/gpu")
cmd_args, _ = cmd_opt.parse_known_args([])


class Graph:
    def __init__(self, num_nodes, node_tags, label):
        self.num_nodes = num_nodes
        self.node_tags = node_tags
        self.label = label


class MLPClassifier(nn.Module):
    def __init__(self, input_size, hidden_size, num_class):
        super().__init__()
        self.h1_weights = nn.Linear(input_size, hidden_size)
        self.last_weights = nn.Linear(hidden_size, num_class)

    def forward(self, x, y=None):
        logits = F.log_softmax(self.last_weights(F.relu(self.h1_weights(x))), dim=1)
        if y is not None:
            loss = F.nll_loss(logits, y)
            pred = logits.data.max(1, keepdim=True)[1]
            acc = pred.eq(y.data.view_as(pred)).cpu()
            return logits, loss, acc
        return logits


class GraphClassifier(nn.Module):
    def __init__(self, label_map, feat_dim, latent_dim):
        super().__init__()
        self.label_map = label_map
        self.feat_dim = feat_dim
        self.embed = nn.Linear(feat_dim, latent_dim)
        self.mlp = MLPClassifier(latent_dim, 16, len(label_map))

    def PrepareFeatureLabel(self, batch_graph):
        labels = torch.LongTensor(len(batch_graph))
        n_nodes = 0
        concat_feat = []
        for i in range(len(batch_graph)):
            labels[i] = self.label_map[batch_graph[i].label]
            n_nodes += batch_graph[i].num_nodes
            concat_feat += batch_graph[i].node_tags
        node_feat = torch.zeros(n_nodes, self.feat_dim)
        node_feat.scatter_(1, torch.LongTensor(concat_feat).view(-1, 1), 1)
        if cmd_args.ctx == 'gpu':
            node_feat = node_feat.cuda()
        return node_feat, labels

    def forward(self, batch_graph):
        node_feat, labels = self.PrepareFeatureLabel(batch_graph)
        if cmd_args.ctx == 'gpu':
            node_feat = node_feat.cuda()
            labels = labels.cuda()
        h = torch.tanh(self.embed(node_feat))
        sizes = [g.num_nodes for g in batch_graph]
        embed = torch.stack([part.mean(dim=0) for part in torch.split(h, sizes)])
        return self.mlp(embed, labels)


torch.manual_seed(0)
graphs = []
for i in range(48):
    n = 3 + i % 4
    label = i % 2
    tags = [(t + label) % 5 if t % 2 == 0 else t % 5 for t in range(n)]
    graphs.append(Graph(n, tags, label))
classifier = GraphClassifier({0: 0, 1: 1}, feat_dim=5, latent_dim=12)
if cmd_args.ctx == 'gpu':
    classifier = classifier.cuda()
optimizer = torch.optim.Adam(classifier.parameters(), lr=0.02)
losses = []
for epoch in range(15):
    for start in range(0, len(graphs), 16):
        _, loss, acc = classifier(graphs[start:start + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
device = next(classifier.parameters()).device.type
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
