# source: https://github.com/IBM/UQ360/issues/28
# UQ360's BnnClassification (a plain estimator class) moves its Bayesian MLP in __init__
# (`self.net = self.net.to(device)`); fit() wraps the numpy arrays in a TensorDataset/DataLoader and
# hands each batch, unmoved, to the network's `neg_elbo(num_batches=..., x=batch_x, y=batch_y)`;
# predict() runs the network on `torch.Tensor(X)` and converts the softmax with `.numpy()`. The
# reporter ran demo_bnn_classification on a GPU ("Expected all tensors to be on the same device,
# but found at least two devices, cuda:0 and cpu!" in fit; with device cpu it runs) and found
# "several places where tensors are created without having the device in mind".
# fails-on-cuda: Expected all tensors to be on the same device
import json
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data_utils


class BayesianLinear(nn.Module):
    def __init__(self, ip_dim, op_dim, prior_std=1.0):
        super().__init__()
        self.w_mu = nn.Parameter(0.1 * torch.randn(ip_dim, op_dim))
        self.w_rho = nn.Parameter(-4.0 * torch.ones(ip_dim, op_dim))
        self.b = nn.Parameter(torch.zeros(op_dim))
        self.prior_std = prior_std

    def forward(self, x):
        std = F.softplus(self.w_rho)
        w = self.w_mu + std * torch.randn_like(std)
        return x @ w + self.b

    def kl(self):
        std = F.softplus(self.w_rho)
        return (torch.log(self.prior_std / std) + (std ** 2 + self.w_mu ** 2) / (2 * self.prior_std ** 2) - 0.5).sum()


class BayesianClassificationNet(nn.Module):
    def __init__(self, ip_dim, op_dim, num_nodes):
        super().__init__()
        self.fc1 = BayesianLinear(ip_dim, num_nodes)
        self.fc2 = BayesianLinear(num_nodes, op_dim)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))

    def neg_elbo(self, num_batches, x, y):
        nll = F.cross_entropy(self(x), y, reduction="sum")
        return nll + (self.fc1.kl() + self.fc2.kl()) / num_batches


class BnnClassification:
    def __init__(self, config, device=None):
        self.config = config
        self.device = device
        self.net = BayesianClassificationNet(config["ip_dim"], config["op_dim"], config["num_nodes"])
        self.net = self.net.to(device)
        self.losses = []

    def fit(self, X=None, y=None, train_loader=None):
        if train_loader is None:
            train = data_utils.TensorDataset(torch.Tensor(X), torch.Tensor(y).long())
            train_loader = data_utils.DataLoader(train, batch_size=self.config["batch_size"], shuffle=True)
        optimizer = torch.optim.Adam(self.net.parameters(), lr=self.config["step_size"])
        for epoch in range(self.config["num_epochs"]):
            avg_loss = 0.0
            for batch_x, batch_y in train_loader:
                loss = self.net.neg_elbo(num_batches=len(train_loader), x=batch_x, y=batch_y) / batch_x.size(0)  # expect: GL101
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                avg_loss += loss.item()
            self.losses.append(avg_loss / len(train_loader))
        return self

    def predict(self, X, mc_samples=20):
        X = torch.Tensor(X)
        y_prob_samples = [F.softmax(self.net(X), dim=1).detach().numpy() for _ in np.arange(mc_samples)]  # expect: GL116, GL109
        prob_mean = np.mean(np.stack(y_prob_samples), 0)
        Result = namedtuple("res", ["y_pred", "y_prob"])
        return Result(np.argmax(prob_mean, axis=1), prob_mean)


torch.manual_seed(0)
rng = np.random.default_rng(0)
y = rng.integers(0, 3, size=300)
X = rng.normal(size=(300, 5)) + np.eye(3, 5)[y] * 2.5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
config = {"ip_dim": 5, "op_dim": 3, "num_nodes": 16, "step_size": 1e-2, "num_epochs": 30, "batch_size": 50}
bnn = BnnClassification(config, device=device)
bnn.fit(X, y)
res = bnn.predict(X)
print("train accuracy", (res.y_pred == y).mean())
print("GPULINT-TRAIN " + json.dumps({"first_loss": bnn.losses[0], "last_loss": bnn.losses[-1], "device": device.type}))
