# source: https://github.com/wolny/pytorch-3dunet/issues/53
# The 3D U-Net trainer validates every validate_after_iters iterations: validate() runs the
# validation batches under torch.no_grad() through self._forward_pass(), but never calls
# self.model.eval() (and train() would then need self.model.train() again), so dropout and batch
# norm behave as in training during validation (the report; the fix adds eval()/train()).
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class UNet3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.BatchNorm3d(4), nn.ReLU(), nn.Dropout3d(0.2))
        self.dec = nn.Conv3d(4, 1, 1)

    def forward(self, x):
        return self.dec(self.enc(x))


class UNet3DTrainer:
    def __init__(self, model, optimizer, loss_criterion, loaders, device, validate_after_iters=4):
        self.model = model
        self.optimizer = optimizer
        self.loss_criterion = loss_criterion
        self.loaders = loaders
        self.device = device
        self.validate_after_iters = validate_after_iters
        self.num_iterations = 1
        self.history = []

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train(self.loaders["train"])

    def train(self, train_loader):
        self.model.train()
        for t in train_loader:
            input, target = self._split_training_batch(t)
            output, loss = self._forward_pass(input, target)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.history.append(loss.item())
            if self.num_iterations % self.validate_after_iters == 0:
                self.validate(self.loaders["val"])
            self.num_iterations += 1

    def validate(self, val_loader):
        losses = []
        with torch.no_grad():
            for t in val_loader:  # expect: GL404
                input, target = self._split_training_batch(t)
                output, loss = self._forward_pass(input, target)
                losses.append(loss.item())
        return sum(losses) / len(losses)

    def _split_training_batch(self, t):
        return tuple(x.to(self.device) for x in t)

    def _forward_pass(self, input, target):
        output = self.model(input)
        return output, self.loss_criterion(output, target)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vol = torch.rand(48, 1, 4, 4, 4)
seg = (vol > 0.5).float()
loaders = {
    "train": DataLoader(TensorDataset(vol[:32], seg[:32]), batch_size=8, shuffle=True),
    "val": DataLoader(TensorDataset(vol[32:], seg[32:]), batch_size=8),
}
model = UNet3D().to(device)
trainer = UNet3DTrainer(model, torch.optim.Adam(model.parameters(), lr=1e-2), nn.BCEWithLogitsLoss(), loaders, device)
trainer.fit(epochs=6)
h = trainer.history
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(h[:4]) / 4, "last_loss": sum(h[-4:]) / 4, "device": device.type}))
