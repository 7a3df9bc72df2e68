# source: https://github.com/atomistic-machine-learning/schnetpack/issues/126
# A Trainer class restores its checkpoint (model and optimizer state) in __init__ when one
# exists; train(device, n_epochs) moves the model only then. Resuming a CUDA run loads the
# optimizer's state while the parameters are still on the host, so Adam's moments stay on the
# host and step() meets device gradients.
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model_path, model, loss_fn, optimizer, train_loader):
        self.model_path = model_path
        self.checkpoint_path = os.path.join(model_path, "checkpoints")
        self._model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.epoch = 0
        self.losses = []
        if os.path.exists(self.checkpoint_path):
            self.restore_checkpoint()
        else:
            os.makedirs(self.checkpoint_path)

    def store_checkpoint(self):
        state = {
            "epoch": self.epoch,
            "model": self._model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }
        torch.save(state, os.path.join(self.checkpoint_path, "checkpoint.pth.tar"))

    def restore_checkpoint(self):
        state = torch.load(os.path.join(self.checkpoint_path, "checkpoint.pth.tar"), map_location="cpu")
        self.epoch = state["epoch"]
        self._model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])  # expect: GL111

    def train(self, device, n_epochs):
        self._model.to(device)
        for _ in range(n_epochs):
            self.epoch += 1
            for x, y in self.train_loader:
                x, y = x.to(device), y.to(device)
                self.optimizer.zero_grad()
                loss = self.loss_fn(self._model(x), y)
                loss.backward()
                self.optimizer.step()
                self.losses.append(loss.item())
        self.store_checkpoint()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(96, 4)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5], [0.0]])
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
workdir = tempfile.mkdtemp()
losses = []
for run in range(2):  # the second run resumes the first one's checkpoint
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    trainer = Trainer(workdir, model, nn.MSELoss(), optimizer, loader)
    trainer.train(device, n_epochs=2)
    losses += trainer.losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
