# source: https://github.com/CMU-SAFARI/SimplePIM/pull/2
# SimplePIM's CPU/GPU baseline for linear regression (benchmarks/linear_reg/linear_reg.py): the
# data and the initial weight vector are put on the GPU on one branch of
# `if torch.cuda.is_available():` (`nn.Parameter(Variable(torch.from_numpy(v).cuda(), ...))`), the
# parameter is handed to `linearRegression(dim, init_weights)`, which keeps it as `self.weights`,
# and after training the script prints `model.weights.detach().numpy()`: on a GPU machine
# "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the
# tensor to host memory first." The PR adds `.cpu()`.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json
import random

import numpy as np
import torch
from torch.autograd import Variable
from torch.nn.functional import linear


class linearRegression(torch.nn.Module):
    def __init__(self, inputSize, init_weight):
        super(linearRegression, self).__init__()
        self.inputSize = inputSize
        self.weights = init_weight
        self.criterion = torch.nn.MSELoss(reduction="mean")

    def forward(self, x, y):
        out = torch.squeeze(linear(x, self.weights))
        return self.criterion(out, y)


def main():
    random.seed(10)
    torch.manual_seed(0)
    dim, num_elements, iters, lr = 10, 200, 30, 1e-3
    init_vector = np.zeros((dim), dtype=np.float32)
    ground_truth = np.array([random.randint(-2, 2) for _ in range(dim)], dtype=np.float32)
    x_train = np.random.RandomState(0).randint(0, 10, (num_elements, dim)).astype(np.float32)
    y_train = x_train @ ground_truth

    if torch.cuda.is_available():
        inputs = Variable(torch.from_numpy(x_train).cuda(), requires_grad=True)
        labels = Variable(torch.from_numpy(y_train).cuda(), requires_grad=True)
        init_weights = torch.nn.Parameter(Variable(torch.from_numpy(init_vector).cuda(), requires_grad=True))
    else:
        inputs = Variable(torch.from_numpy(x_train), requires_grad=True)
        labels = Variable(torch.from_numpy(y_train), requires_grad=True)
        init_weights = torch.nn.Parameter(Variable(torch.from_numpy(init_vector), requires_grad=True))

    model = linearRegression(dim, init_weights)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    losses = []
    for epoch in range(iters):
        optimizer.zero_grad()
        loss = model(inputs, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    print("linear model weights: ")
    print(model.weights.detach().numpy())  # expect: GL109
    print("ground truth: " + str(ground_truth))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))


if __name__ == "__main__":
    main()
