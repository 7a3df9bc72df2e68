# source: https://github.com/MatthewWilletts/algostability/issues/2
# algostability's VaDE model (models/nde.py) and its runner (cluster_real_data_runner.py):
# compute_representations() trains the model (or loads its checkpoint when one exists), moves it to
# the device and draws samples with `f.sample(10, per_comp=True)`; sample() builds the one-hot
# component indicators with `torch.tensor(np.eye(self.num_components, dtype=np.float32))`, on the
# CPU, and multiplies them with the prior means `self.mu_p_z`, a parameter on the GPU ("device
# mismatch after loading checkpoint in sample()"; the reporter's fix: `.to(self.device)`).
# (A small VaDE with MLP encoder/decoder and a simplified ELBO on synthetic clustered data; the
# checkpoint is written by the script itself in a temporary directory.)
# fails-on-cuda: Expected all tensors to be on the same device
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class VaDE(nn.Module):
    def __init__(self, data_dim=6, latent_dim=2, num_components=3, hidden=16):
        super().__init__()
        self.num_components = num_components
        self.encoder = nn.Sequential(nn.Linear(data_dim, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent_dim))
        self.decoder = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, data_dim))
        self.pi_logits = nn.Parameter(torch.zeros(num_components))
        self.mu_p_z = nn.Parameter(torch.randn(latent_dim, num_components))
        self.logvar_p_z = nn.Parameter(torch.zeros(latent_dim, num_components))

    def encode(self, x):
        mu, logv = self.encoder(x).chunk(2, dim=-1)
        return mu, logv

    def decode(self, z):
        return self.decoder(z)

    def forward(self, x):
        mu, logv = self.encode(x)
        z = mu + torch.randn_like(mu) * (0.5 * logv).exp()
        recon = self.decode(z)
        # log p(z | c) for every component, then the mixture log-likelihood
        diff = z.unsqueeze(-1) - self.mu_p_z.unsqueeze(0)
        log_pzc = -0.5 * (diff ** 2 / self.logvar_p_z.exp() + self.logvar_p_z).sum(1)
        log_pz = torch.logsumexp(log_pzc + F.log_softmax(self.pi_logits, dim=0), dim=-1)
        entropy = 0.5 * logv.sum(-1)
        elbo = -F.mse_loss(recon, x, reduction="none").sum(-1) + log_pz + entropy
        return -elbo.mean()

    def sample(self, n, per_comp=False):
        if per_comp:
            y_samples = torch.tensor(np.eye(self.num_components, dtype=np.float32))
            y_samples = y_samples.repeat_interleave(n, dim=0)
        else:
            probs = F.softmax(self.pi_logits, dim=0)
            y_samples = F.one_hot(torch.multinomial(probs, n, replacement=True), self.num_components).float()
        loc = y_samples @ self.mu_p_z.permute(1, 0)  # expect: GL116
        scale = (y_samples @ self.logvar_p_z.permute(1, 0)).exp().sqrt()
        z = loc + scale * torch.randn_like(loc)
        return self.decode(z)


def make_data(n, generator):
    centers = torch.tensor([[3.0, 0, 0, 1, 1, 0], [0, 3.0, 0, 0, 1, 1], [0, 0, 3.0, 1, 0, 1]])
    labels = torch.randint(0, 3, (n,), generator=generator)
    return centers[labels] + 0.3 * torch.randn(n, 6, generator=generator)


def train(model, data, device, epochs=6, batch_size=32):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        for i in range(0, len(data), batch_size):
            loss = model(data[i : i + batch_size].to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def compute_representations(data, device, ckpt_path):
    losses = []
    if os.path.exists(ckpt_path):
        print("loading model weights from:", ckpt_path)
        f = VaDE().to(device)
        f.load_state_dict(torch.load(ckpt_path, map_location=device))
    else:
        f = VaDE().to(device)
        losses = train(f, data, device)
        torch.save(f.state_dict(), ckpt_path)
    with torch.no_grad():
        samples = f.sample(10, per_comp=True)
    print("samples:", tuple(samples.shape))
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    data = make_data(256, torch.Generator().manual_seed(0))
    ckpt_path = os.path.join(tempfile.mkdtemp(), "checkpoint.pth")
    losses = compute_representations(data, device, ckpt_path)
    compute_representations(data, device, ckpt_path)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
