# fixture: static (needs pytorch_lightning and a GPU)
# source: https://github.com/Lightning-AI/pytorch-lightning/issues/5140
# A k-fold screw-classification script wanted to "train and save the model with 16-bit precision":
# it calls `model.half()` on the LightningModule and then fits one Trainer per fold with
# `precision=16`. Lightning's native 16-bit precision is mixed precision: it keeps a GradScaler and
# unscales the gradients before each optimizer step, and float16 parameters give float16 gradients,
# so the first step fails with "Attempting to unscale FP16 gradients". The answer: drop `.half()`
# (precision=16 already runs the forward in float16 under autocast), convert a copy for saving.
# fails-on-cuda: Attempting to unscale FP16 gradients
import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, n_class=2):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(8, n_class)

    def forward(self, x):
        return self.fc(self.features(x))


class Model(pl.LightningModule):
    def __init__(self, n_class=2, folds=3, lr=1e-3):
        super().__init__()
        self.nets = nn.ModuleList([Net(n_class) for _ in range(folds)])
        self.cur_net = self.nets[0]
        self.lr = lr

    def set_net(self, i):
        self.cur_net = self.nets[i]

    def forward(self, x):
        return self.cur_net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.cur_net.parameters(), lr=self.lr)


class MyDataModule:
    def __init__(self, folds=3, batch_size=32):
        self.x = torch.randn(96, 3, 16, 16)
        self.y = (self.x.mean(dim=(1, 2, 3)) > 0).long()
        self.folds = folds
        self.batch_size = batch_size

    def _split(self, i, train):
        idx = torch.arange(len(self.x)) % self.folds
        keep = idx != i if train else idx == i
        return TensorDataset(self.x[keep], self.y[keep])

    def train_dataloader(self, i):
        return DataLoader(self._split(i, True), batch_size=self.batch_size, shuffle=True, num_workers=2, pin_memory=True)

    def val_dataloader(self, i):
        return DataLoader(self._split(i, False), batch_size=self.batch_size, num_workers=2, pin_memory=True)


def train(folds=3, epochs=5):
    model = Model(folds=folds)
    model.half()
    data_module = MyDataModule(folds)
    for i in range(folds):
        model.set_net(i)
        trainer = pl.Trainer(max_epochs=epochs, gpus=[0], precision=16)  # expect: GL207
        trainer.fit(model=model, train_dataloader=data_module.train_dataloader(i), val_dataloaders=data_module.val_dataloader(i))
    torch.save(model.state_dict(), "model-fp16.pt")


if __name__ == "__main__":
    train()
