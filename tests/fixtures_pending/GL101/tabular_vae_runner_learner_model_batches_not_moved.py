# source: https://github.com/lschmiddey/deep_tabular_augmentation/issues/11
# deep_tabular_augmentation: the user moves the VAE with `model = Autoencoder(...).to(DEVICE)` and
# hands it to a Learner with a DataBunch built by create_loaders() (plain TensorDatasets on the
# CPU); the fastai-course style Runner iterates `self.data.train_dl` (a property reading
# `self.learn.data`) and calls `self.model(self.xb)` (a property reading `self.learn.model`) in
# one_batch(): "Expected all tensors to be on the same device ... (when checking argument for
# argument mat1 in method wrapper_addmm)". The maintainer: the loaders never move the data.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def create_datasets(train_data, train_target, test_data, test_target):
    trn_ds = TensorDataset(torch.tensor(train_data).float(), torch.tensor(train_target).long())
    tst_ds = TensorDataset(torch.tensor(test_data).float(), torch.tensor(test_target).long())
    return trn_ds, tst_ds


def create_loaders(data, bs=128, jobs=0):
    trn_ds, tst_ds = data
    trn_dl = DataLoader(trn_ds, batch_size=bs, shuffle=True, num_workers=jobs)
    tst_dl = DataLoader(tst_ds, batch_size=bs, shuffle=False, num_workers=jobs)
    return trn_dl, tst_dl


class DataBunch:
    def __init__(self, train_dl, test_dl):
        self.train_dl, self.test_dl = train_dl, test_dl


class Autoencoder(nn.Module):
    def __init__(self, D_in, H=16, latent_dim=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(D_in, H), nn.ReLU())
        self.mu = nn.Linear(H, latent_dim)
        self.logvar = nn.Linear(H, latent_dim)
        self.dec = nn.Sequential(nn.Linear(latent_dim, H), nn.ReLU(), nn.Linear(H, D_in))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


class customLoss(nn.Module):
    def forward(self, x_recon, x, mu, logvar):
        mse = F.mse_loss(x_recon, x, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return (mse + 0.1 * kld) / x.size(0)


class Learner:
    def __init__(self, model, opt, loss_func, data):
        self.model, self.opt, self.loss_func, self.data = model, opt, loss_func, data


class Runner:
    def __init__(self):
        self.in_train = False
        self.train_losses = []

    @property
    def opt(self):
        return self.learn.opt

    @property
    def model(self):
        return self.learn.model

    @property
    def loss_func(self):
        return self.learn.loss_func

    @property
    def data(self):
        return self.learn.data

    def one_batch(self, xb, _):
        self.xb = xb
        self.recon_batch, self.mu, self.logvar = self.model(self.xb)  # expect: GL101
        self.loss = self.loss_func(self.recon_batch, self.xb, self.mu, self.logvar)
        if not self.in_train:
            return
        self.train_losses.append(self.loss.item())
        self.loss.backward()
        self.opt.step()
        self.opt.zero_grad()

    def all_batches(self, dl):
        for xb, _ in dl:
            self.one_batch(xb, _)

    def fit(self, epochs, learn):
        self.epochs, self.learn, self.loss = epochs, learn, torch.tensor(0.0)
        for epoch in range(epochs):
            self.epoch = epoch
            self.in_train = True
            self.model.train()
            self.all_batches(self.data.train_dl)
            self.in_train = False
            self.model.eval()
            with torch.no_grad():
                self.all_batches(self.data.test_dl)
        self.learn = None


torch.manual_seed(0)
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(512, 6)
X[:, 3:] = X[:, :3] * 0.5 + 0.1 * X[:, 3:]
y = (X[:, 0] > 0).long()
datasets = create_datasets(X[:448].numpy(), y[:448].numpy(), X[448:].numpy(), y[448:].numpy())
data = DataBunch(*create_loaders(datasets, bs=64))
D_in = X.shape[1]
model = Autoencoder(D_in).to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_func = customLoss()
learn = Learner(model, opt, loss_func, data)
run = Runner()
run.fit(6, learn)
print("GPULINT-TRAIN " + json.dumps({"first_loss": run.train_losses[0], "last_loss": run.train_losses[-1], "device": DEVICE.type}))
