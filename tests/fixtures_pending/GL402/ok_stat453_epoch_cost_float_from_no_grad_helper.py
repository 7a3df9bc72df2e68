# Pending hard negative (real shape: rasbt/stat453-deep-learning-ss21, commit 2202699c5fd3,
# L09/code/mlp-pytorch_softmax-crossentr.ipynb cell 10): the training loop names the batch loss
# `cost` (`cost = F.cross_entropy(logits, targets)`, backward, step); after each epoch the same
# name is rebound to `compute_loss(model, train_loader)`, a helper that sums the losses under
# `torch.no_grad()` and returns `float(curr_loss)/cnt`, a Python float. `epoch_cost.append(cost)`
# keeps that float: no graph is accumulated. GL402 reads `cost` as the graph-carrying batch loss.
import json
import time

import torch
import torch.nn.functional as F

torch.manual_seed(0)
DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
NUM_EPOCHS = 4


class MLP(torch.nn.Module):
    def __init__(self, num_features, num_hidden, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.linear_1 = torch.nn.Linear(num_features, num_hidden)
        self.linear_1.weight.detach().normal_(0.0, 0.1)
        self.linear_1.bias.detach().zero_()
        self.linear_out = torch.nn.Linear(num_hidden, num_classes)
        self.linear_out.weight.detach().normal_(0.0, 0.1)
        self.linear_out.bias.detach().zero_()

    def forward(self, x):
        out = torch.sigmoid(self.linear_1(x))
        return self.linear_out(out)


centers = torch.randn(3, 16) * 2
train_loader = []
for _ in range(5):
    t = torch.randint(0, 3, (32,))
    train_loader.append((centers[t] + 0.5 * torch.randn(32, 16), t))

model = MLP(num_features=16, num_hidden=20, num_classes=3).to(DEVICE)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)


def compute_loss(net, data_loader):
    curr_loss = 0.0
    with torch.no_grad():
        for cnt, (features, targets) in enumerate(data_loader):
            features = features.view(-1, 16).to(DEVICE)
            targets = targets.to(DEVICE)
            logits = net(features)
            loss = F.cross_entropy(logits, targets)
            curr_loss += loss
        return float(curr_loss) / cnt


start_time = time.time()
minibatch_cost = []
epoch_cost = []
for epoch in range(NUM_EPOCHS):
    model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):
        features = features.view(-1, 16).to(DEVICE)
        targets = targets.to(DEVICE)
        logits = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        minibatch_cost.append(cost.item())
    cost = compute_loss(model, train_loader)
    epoch_cost.append(cost)
    print("Epoch: %03d/%03d Train Cost: %.4f" % (epoch + 1, NUM_EPOCHS, cost))

print("GPULINT-TRAIN " + json.dumps({"first_loss": minibatch_cost[0], "last_loss": minibatch_cost[-1], "device": DEVICE.type}))
