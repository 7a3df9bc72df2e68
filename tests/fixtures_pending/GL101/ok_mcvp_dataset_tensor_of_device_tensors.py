# Pending hard negative (real shape: PacktPublishing/Modern-Computer-Vision-with-PyTorch, commit
# 42963ad37c73, Chapter02/Specifying_batch_size_while_training_a_model.ipynb cells 3-10): the toy
# data is made with `torch.tensor(...).float()` and moved with `X = X.to(device)`; the Dataset's
# `__init__` then wraps the already-moved tensors again with `torch.tensor(x).float()`. A copy made
# by `torch.tensor(t)` of a tensor keeps that tensor's device (PyTorch warns to use
# `t.clone().detach()`), so every batch the DataLoader yields is already on `device`. The engine
# reads `torch.tensor(...)` without `device=` as a host tensor, and GL101 reports the batch.
import json
import warnings

import torch
import torch.nn as nn
from torch.optim import SGD
from torch.utils.data import DataLoader, Dataset

warnings.filterwarnings("ignore", message="To copy construct from a tensor")
torch.manual_seed(0)

x = [[1, 2], [3, 4], [5, 6], [7, 8]]
y = [[3], [7], [11], [15]]
X = torch.tensor(x).float()
Y = torch.tensor(y).float()
device = "cuda" if torch.cuda.is_available() else "cpu"
X = X.to(device)
Y = Y.to(device)


class MyDataset(Dataset):
    def __init__(self, x, y):
        self.x = torch.tensor(x).float()
        self.y = torch.tensor(y).float()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, ix):
        return self.x[ix], self.y[ix]


ds = MyDataset(X, Y)
dl = DataLoader(ds, batch_size=2, shuffle=True)


class MyNeuralNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_to_hidden_layer = nn.Linear(2, 8)
        self.hidden_layer_activation = nn.ReLU()
        self.hidden_to_output_layer = nn.Linear(8, 1)

    def forward(self, x):
        x = self.input_to_hidden_layer(x)
        x = self.hidden_layer_activation(x)
        return self.hidden_to_output_layer(x)


mynet = MyNeuralNet().to(device)
loss_func = nn.MSELoss()
opt = SGD(mynet.parameters(), lr=0.001)
loss_history = []
for _ in range(20):
    for data in dl:
        x, y = data
        opt.zero_grad()
        loss_value = loss_func(mynet(x), y)
        loss_value.backward()
        opt.step()
        loss_history.append(loss_value.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": loss_history[0], "last_loss": loss_history[-1], "device": torch.device(device).type}))
