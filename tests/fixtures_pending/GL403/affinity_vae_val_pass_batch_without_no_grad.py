# source: https://github.com/ccpem/affinity-vae/issues/113
# ccpem/affinity-vae: avae/utils_learning.py's pass_batch(device, vae, batch, b, batches, e, epochs,
# history, loss, optimizer=None, beta=None) runs the forward, computes the AVAELoss terms, records
# them with `.item()`, and backpropagates and steps only `if optimizer is not None:`. avae/train.py
# calls it for the training batches with the optimizer and, after `vae.eval()`, for the validation
# batches without one, outside any `torch.no_grad()`: every validation forward and loss records an
# autograd graph that is never used (issue #113: "with torch.no_grad(): for evaluation mode"). The
# reconstruction/meta-data returns and the beta schedule are kept; the VAE is a tiny stand-in.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class AffinityVAE(nn.Module):
    def __init__(self, dim=16, latent=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Dropout(0.1))
        self.mu = nn.Linear(32, latent)
        self.logvar = nn.Linear(32, latent)
        self.decoder = nn.Sequential(nn.Linear(latent, 32), nn.ReLU(), nn.Linear(32, dim))

    def forward(self, x):
        h = self.encoder(x)
        lat_mu, lat_logvar = self.mu(h), self.logvar(h)
        lat = lat_mu + torch.randn_like(lat_mu) * torch.exp(0.5 * lat_logvar)
        return self.decoder(lat), lat_mu, lat_logvar, lat, None


class AVAELoss:
    def __init__(self, beta, gamma=0.1):
        self.beta = beta
        self.gamma = gamma

    def __call__(self, x, x_hat, lat_mu, lat_logvar, e, batch_aff=None):
        recon = ((x_hat - x) ** 2).mean()
        kldiv = -0.5 * torch.mean(1 + lat_logvar - lat_mu.pow(2) - lat_logvar.exp())
        affin = ((lat_mu[:, 0] - batch_aff) ** 2).mean()
        total = recon + self.beta[e] * kldiv + self.gamma * affin
        return [total, recon, kldiv, affin]


def pass_batch(device, vae, batch, b, batches, e=None, epochs=None, history=[], loss=None, optimizer=None, beta=None):
    x = batch[0].to(device)
    aff = batch[2].to(device)
    x = x.to(torch.float32)
    x_hat, lat_mu, lat_logvar, lat, lat_pose = vae(x)
    if loss is not None:
        history_loss = loss(x, x_hat, lat_mu, lat_logvar, e, batch_aff=aff)
        for i in range(len(history[-1])):
            history[-1][i] += history_loss[i].item()
    if optimizer is not None:
        history_loss[0].backward()
        optimizer.step()
        optimizer.zero_grad()
    return x, x_hat, lat_mu, lat_logvar, lat, lat_pose, history


def train(trains, vals, epochs, device):
    vae = AffinityVAE().to(device)
    optimizer = torch.optim.Adam(vae.parameters(), lr=3e-3)
    beta_arr = [min(1.0, 0.1 * (e + 1)) for e in range(epochs)]
    loss = AVAELoss(beta_arr)
    t_history, v_history = [], []
    for epoch in range(epochs):
        t_history.append(4 * [0.0])
        vae.train()
        for b, batch in enumerate(trains):
            x, x_hat, lat_mu, lat_logvar, lat, lat_pose, t_history = pass_batch(
                device, vae, batch, b, len(trains), epoch, epochs, history=t_history, loss=loss, optimizer=optimizer, beta=beta_arr
            )
        t_history[-1] = [v / len(trains) for v in t_history[-1]]

        v_history.append(4 * [0.0])
        vae.eval()
        for b, batch in enumerate(vals):
            x, x_hat, lat_mu, lat_logvar, lat, lat_pose, v_history = pass_batch(  # expect: GL403
                device, vae, batch, b, len(vals), epoch, epochs, history=v_history, loss=loss, beta=beta_arr
            )
        v_history[-1] = [v / len(vals) for v in v_history[-1]]
    return t_history


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.randn(96, 4) @ torch.randn(4, 16)
    aff = data[:, :4].mean(dim=1)
    labels = (aff > 0).long()
    trains = DataLoader(TensorDataset(data[:64], labels[:64], aff[:64]), batch_size=16, shuffle=True)
    vals = DataLoader(TensorDataset(data[64:], labels[64:], aff[64:]), batch_size=16)
    history = train(trains, vals, 12, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0][1], "last_loss": history[-1][1], "device": device.type}))
