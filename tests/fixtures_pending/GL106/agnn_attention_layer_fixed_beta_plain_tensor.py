# source: https://github.com/dawnranger/pytorch-AGNN/issues/5
# AGNN (layers.py + train.py in one script): the first GraphAttentionLayer of the Cora model is
# built with requires_grad=False, and then keeps `beta` as a plain `Variable(torch.zeros(1))`
# attribute instead of a Parameter. `model.cuda()` moves the parameters of the other layers but
# not this tensor, so `self.beta * torch.div(...)` in forward combines a CPU tensor with the
# CUDA features ("expected device cpu but got device cuda:0" in model.py line 28 of the report;
# the reply suggests `self.beta.cuda()`).
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable
from torch.nn.parameter import Parameter


class GraphAttentionLayer(nn.Module):
    def __init__(self, requires_grad=True):
        super(GraphAttentionLayer, self).__init__()
        if requires_grad:
            self.beta = Parameter(torch.Tensor(1).uniform_(0, 1), requires_grad=requires_grad)
        else:
            self.beta = Variable(torch.zeros(1), requires_grad=requires_grad)  # expect: GL106

    def forward(self, x, adj):
        norm2 = torch.norm(x, 2, 1).view(-1, 1)
        cos = self.beta * torch.div(torch.mm(x, x.t()), torch.mm(norm2, norm2.t()) + 1e-7)
        mask = (1.0 - adj) * -1e9
        P = F.softmax(cos + mask, dim=1)
        return torch.mm(P, x)


class LinearLayer(nn.Module):
    def __init__(self, in_features, out_features):
        super(LinearLayer, self).__init__()
        self.weight = Parameter(nn.init.xavier_uniform_(torch.empty(in_features, out_features)))

    def forward(self, input):
        return torch.mm(input, self.weight)


class AGNN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, nlayers, dropout_rate):
        super(AGNN, self).__init__()
        self.layers = nlayers
        self.dropout_rate = dropout_rate
        self.embeddinglayer = LinearLayer(nfeat, nhid)
        self.attentionlayers = nn.ModuleList()
        self.attentionlayers.append(GraphAttentionLayer(requires_grad=False))
        for i in range(1, self.layers):
            self.attentionlayers.append(GraphAttentionLayer())
        self.outputlayer = LinearLayer(nhid, nclass)

    def forward(self, x, adj):
        x = F.relu(self.embeddinglayer(x))
        x = F.dropout(x, self.dropout_rate, training=self.training)
        for i in range(self.layers):
            x = self.attentionlayers[i](x, adj)
        x = self.outputlayer(x)
        return F.log_softmax(x, dim=1)


def load_data(n=60, nfeat=12, nclass=3):
    labels = torch.arange(n) % nclass
    features = F.one_hot(labels, nclass).float().repeat(1, nfeat // nclass) + 0.5 * torch.randn(n, nfeat)
    adj = (labels[:, None] == labels[None, :]).float()
    adj = ((adj + (torch.rand(n, n) < 0.05).float()) > 0).float()
    idx = torch.randperm(n)
    return adj, features, labels, idx[:30], idx[30:45], idx[45:]


def train():
    losses = []
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        losses.append(loss_train.item())
    return losses


def test():
    model.eval()
    with torch.no_grad():
        output = model(features, adj)
        loss_test = F.nll_loss(output[idx_test], labels[idx_test])
    print("Test set results:", "loss= {:.4f}".format(loss_test.item()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--layers", type=int, default=3)
    args = parser.parse_args([])
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    torch.manual_seed(args.seed)

    adj, features, labels, idx_train, idx_val, idx_test = load_data()
    model = AGNN(nfeat=features.shape[1], nhid=args.hidden, nclass=int(labels.max()) + 1,
                 nlayers=args.layers, dropout_rate=0.5)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)
    if args.cuda:
        model.cuda()
        features = features.cuda()
        adj = adj.cuda()
        labels = labels.cuda()
        idx_train = idx_train.cuda()
        idx_test = idx_test.cuda()

    losses = train()
    test()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1],
                                         "device": "cuda" if args.cuda else "cpu"}))
