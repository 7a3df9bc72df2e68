# source: https://github.com/DeepRank/Deeprank-GNN/pull/70
# Deeprank-GNN's `NeuralNet` trainer class keeps everything on `self`: `put_model_to_device()`
# picks `self.device` and builds the network there (`Net(...).to(self.device)`), `set_loss()` makes
# `self.loss`, and `_epoch()` moves each batch, calls the model and hands prediction and target to
# the class's helper `format_output()`. In classification mode that helper re-maps the targets to
# class indices with `torch.tensor([...])`, a new tensor on the host, so `self.loss(pred, target)`
# mixes devices on a GPU; after it, the epoch collects the predicted classes with
# `np.argmax(pred.detach(), axis=1)` on a GPU tensor ("can't convert cuda:0 device type tensor to
# numpy"). PR #70 ("cuda compatibility") moves the re-mapped targets to `self.device` and adds
# `.cpu()` before NumPy. (The protein-interface graphs are stood in for by dense node-feature
# vectors of two classes; the HDF5 export is left out.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class GINet(nn.Module):
    def __init__(self, input_shape, output_shape=1, input_shape_edge=1):
        super().__init__()
        self.fc1 = nn.Linear(input_shape, 32)
        self.fc2 = nn.Linear(32, output_shape)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class NeuralNet(object):
    def __init__(self, database, Net, target="bin_class", lr=0.01, batch_size=16, task=None, classes=[0, 1], threshold=None, shuffle=True):
        self.target = target
        self.lr = lr
        self.batch_size = batch_size
        self.task = task
        self.classes = classes
        self.threshold = threshold
        self.shuffle = shuffle
        if self.task is None:
            if self.target in ["irmsd", "lrmsd", "fnat", "dockQ"]:
                self.task = "reg"
            elif self.target in ["bin_class", "capri_classes"]:
                self.task = "class"
        if self.task == "class" and self.threshold is None:
            self.threshold = self.classes[1]
        self.load_model(database, Net)

    def load_model(self, database, Net):
        self.train_loader = DataLoader(database, batch_size=self.batch_size, shuffle=self.shuffle)
        self.put_model_to_device(database, Net)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        self.set_loss()
        self.train_acc = []
        self.train_loss = []

    def put_model_to_device(self, dataset, Net):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print("device set to :", self.device)
        num_features = dataset[0][0].shape[0]
        if self.task == "reg":
            self.model = Net(num_features, 1).to(self.device)
        elif self.task == "class":
            self.classes_to_idx = {i: idx for idx, i in enumerate(self.classes)}
            self.idx_to_classes = {idx: i for idx, i in enumerate(self.classes)}
            self.output_shape = len(self.classes)
            self.model = Net(num_features, self.output_shape).to(self.device)

    def set_loss(self):
        if self.task == "reg":
            self.loss = nn.MSELoss()
        elif self.task == "class":
            self.loss = nn.CrossEntropyLoss(reduction="mean")

    def train(self, nepoch=1):
        for epoch in range(1, nepoch + 1):
            self.model.train()
            _out, _y, _loss = self._epoch(epoch)
            self.train_loss.append(_loss)
            _acc = float(np.mean(np.array(_out) == np.array(_y)))
            self.train_acc.append(_acc)
            print("Epoch [%04d] : train loss %e | accuracy %1.4e" % (epoch, _loss, _acc))

    def _epoch(self, epoch):
        running_loss = 0
        out = []
        y = []
        for x_batch, y_batch in self.train_loader:
            x_batch, y_batch = x_batch.to(self.device), y_batch.to(self.device)
            self.optimizer.zero_grad()
            pred = self.model(x_batch)
            pred, y_batch = self.format_output(pred, y_batch)

            loss = self.loss(pred, y_batch)  # expect: GL116
            running_loss += loss.detach().item()
            loss.backward()
            self.optimizer.step()

            y += y_batch.tolist()
            if self.task == "class":
                pred = F.softmax(pred, dim=1)
                pred = np.argmax(pred.detach(), axis=1)  # expect: GL109
            else:
                pred = pred.detach().reshape(-1)
            out += pred.tolist()
        return out, y, running_loss / len(self.train_loader)

    def format_output(self, pred, target=None):
        """Format the network output depending on the task (classification/regression)."""
        if self.task == "class":
            if target is not None:
                target = torch.tensor([self.classes_to_idx[int(x)] for x in target])
        else:
            pred = pred.reshape(-1)
        return pred, target


def main():
    torch.manual_seed(0)
    x = torch.randn(160, 12)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    database = TensorDataset(x, y)
    model = NeuralNet(database, GINet, target="bin_class", lr=0.01)
    model.train(nepoch=6)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": model.train_loss[0], "last_loss": model.train_loss[-1], "device": model.device.type}))


if __name__ == "__main__":
    main()
