# source: https://github.com/dataflowr/notebooks/blob/043dff0f792a2d8a3edc4b3b30432ae6a69b7fde/graphs/spectral_gnn.ipynb
# Hard negative (PRECISION26 A3). The course's `Graph_ConvNet_LeNet5` has no batch norm and no
# dropout layer of its own: its forward takes the dropout rate as an argument and builds
# `nn.Dropout(d)(x)` on the spot; training passes `dropout_value = 0.5`, the test loop under
# `torch.no_grad()` passes `0.0`. `net.eval()` would change nothing there (a module built inside
# forward is always in training mode, and a rate of 0 keeps every unit). GL404 reports the test loop
# as "training mode (dropout on ...)": the engine's mode-sensitivity test reads the word `Dropout`
# in the class's text.
import collections
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Graph_ConvNet_LeNet5(nn.Module):
    def __init__(self, V, FC1_F, n_classes):
        super().__init__()
        self.cl1 = nn.Linear(1, 4)
        self.fc1 = nn.Linear(V * 4, FC1_F)
        self.fc2 = nn.Linear(FC1_F, n_classes)

    def graph_conv(self, x, L):
        x = torch.matmul(L, x)
        return self.cl1(x)

    def forward(self, x, d, L):
        x = x.unsqueeze(2)
        x = F.relu(self.graph_conv(x, L))
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = nn.Dropout(d)(x)
        return self.fc2(x)

    def loss(self, y, y_target, l2_regularization):
        loss = nn.CrossEntropyLoss()(y, y_target)
        l2_loss = 0.0
        for param in self.parameters():
            l2_loss += (param * param).sum()
        return loss + 0.5 * l2_regularization * l2_loss

    def evaluation(self, y_predicted, test_l):
        _, class_predicted = torch.max(y_predicted.data, 1)
        return 100.0 * (class_predicted == test_l).sum() / y_predicted.size(0)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
V, batch_size = 16, 32
A = (torch.rand(V, V) > 0.7).float()
A = ((A + A.t()) > 0).float()
L = (torch.diag(A.sum(1)) - A) / V
train_data, test_data = torch.randn(256, V), torch.randn(64, V)
train_labels, test_labels = (train_data.sum(1) > 0).long(), (test_data.sum(1) > 0).long()
L, train_data, test_data = L.to(device), train_data.to(device), test_data.to(device)
train_labels, test_labels = train_labels.to(device), test_labels.to(device)

net = Graph_ConvNet_LeNet5(V, 32, 2).to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
dropout_value = 0.5
first_loss = None
for epoch in range(15):
    net.train()
    for i in range(0, train_data.size(0), batch_size):
        train_x, train_y = train_data[i:i + batch_size], train_labels[i:i + batch_size]
        y = net(train_x, dropout_value, L)
        loss = net.loss(y, train_y, 5e-4)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if first_loss is None:
            first_loss = loss.item()

    with torch.no_grad():
        running_accuracy_test = 0
        running_total_test = 0
        indices_test = collections.deque()
        indices_test.extend(range(test_data.shape[0]))
        while len(indices_test) >= batch_size:
            batch_idx_test = [indices_test.popleft() for i in range(batch_size)]
            test_x, test_y = test_data[batch_idx_test, :], test_labels[batch_idx_test]
            y = net(test_x, 0.0, L)
            running_accuracy_test += net.evaluation(y, test_y).item()
            running_total_test += 1
    print("epoch", epoch, "test accuracy", running_accuracy_test / running_total_test)

print("GPULINT-TRAIN " + json.dumps({"first_loss": first_loss, "last_loss": loss.item(), "device": device.type}))
