# source: https://github.com/pytorch/pytorch/issues/50401
# A DAGMM implementation (model.py `DaGMM.compute_energy`, reported on macOS): every tensor of the
# script goes through the helper `to_var`, which calls `.cuda()` only when
# `torch.cuda.is_available()`, and the solver moves the model the same way; but inside
# `compute_energy` the per-component determinants are computed on the CPU (`cov_k.cpu()`) and
# gathered with an unconditional `det_cov = torch.cat(det_cov).cuda()`. On a GPU machine that line
# brings them back next to the other terms; on the reporter's Mac it stops training with
# "AssertionError: Torch not compiled with CUDA enabled". (KDDCup features replaced by synthetic
# 16-dim vectors, the custom Cholesky autograd function by `torch.linalg.cholesky`; the
# `Solver` class keeps the model and the optimizer on `self` across `build_model` and `train`.)
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def to_var(x):
    if torch.cuda.is_available():
        x = x.cuda()
    return x


class DaGMM(nn.Module):
    def __init__(self, n_gmm=2, latent_dim=3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 1))
        self.decoder = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 16))
        self.estimation = nn.Sequential(nn.Linear(latent_dim, 10), nn.Tanh(), nn.Linear(10, n_gmm), nn.Softmax(dim=1))

    def relative_euclidean_distance(self, a, b):
        return (a - b).norm(2, dim=1) / a.norm(2, dim=1)

    def forward(self, x):
        enc = self.encoder(x)
        dec = self.decoder(enc)
        rec_cosine = F.cosine_similarity(x, dec, dim=1)
        rec_euclidean = self.relative_euclidean_distance(x, dec)
        z = torch.cat([enc, rec_euclidean.unsqueeze(-1), rec_cosine.unsqueeze(-1)], dim=1)
        gamma = self.estimation(z)
        return enc, dec, z, gamma

    def compute_gmm_params(self, z, gamma):
        N = gamma.size(0)
        sum_gamma = torch.sum(gamma, dim=0)
        phi = sum_gamma / N
        mu = torch.sum(gamma.unsqueeze(-1) * z.unsqueeze(1), dim=0) / sum_gamma.unsqueeze(-1)
        z_mu = z.unsqueeze(1) - mu.unsqueeze(0)
        z_mu_outer = z_mu.unsqueeze(-1) * z_mu.unsqueeze(-2)
        cov = torch.sum(gamma.unsqueeze(-1).unsqueeze(-1) * z_mu_outer, dim=0) / sum_gamma.unsqueeze(-1).unsqueeze(-1)
        return phi, mu, cov

    def compute_energy(self, z, phi, mu, cov):
        k, D, _ = cov.size()
        z_mu = z.unsqueeze(1) - mu.unsqueeze(0)
        cov_inverse = []
        det_cov = []
        cov_diag = 0
        eps = 1e-3
        for i in range(k):
            cov_k = cov[i] + to_var(torch.eye(D) * eps)
            cov_inverse.append(torch.inverse(cov_k).unsqueeze(0))
            chol = torch.linalg.cholesky(cov_k.cpu() * (2 * np.pi))
            det_cov.append((chol.diag().prod() ** 2).unsqueeze(0))
            cov_diag = cov_diag + torch.sum(1 / cov_k.diag())
        cov_inverse = torch.cat(cov_inverse, dim=0)
        det_cov = torch.cat(det_cov).cuda()  # expect: GL102
        exp_term_tmp = -0.5 * torch.sum(torch.sum(z_mu.unsqueeze(-1) * cov_inverse.unsqueeze(0), dim=-2) * z_mu, dim=-1)
        max_val = torch.max(exp_term_tmp.clamp(min=0), dim=1, keepdim=True)[0]
        exp_term = torch.exp(exp_term_tmp - max_val)
        sample_energy = -max_val.squeeze() - torch.log(
            torch.sum(phi.unsqueeze(0) * exp_term / torch.sqrt(det_cov).unsqueeze(0), dim=1) + 1e-12)
        return torch.mean(sample_energy), cov_diag

    def loss_function(self, x, x_hat, z, gamma, lambda_energy, lambda_cov_diag):
        recon_error = torch.mean((x - x_hat) ** 2)
        phi, mu, cov = self.compute_gmm_params(z, gamma)
        sample_energy, cov_diag = self.compute_energy(z, phi, mu, cov)
        loss = recon_error + lambda_energy * sample_energy + lambda_cov_diag * cov_diag
        return loss, sample_energy, recon_error, cov_diag


class Solver:
    def __init__(self, data, lr=1e-3, gmm_k=2, batch_size=32, num_epochs=6):
        self.data = data
        self.lr = lr
        self.gmm_k = gmm_k
        self.batch_size = batch_size
        self.num_epochs = num_epochs
        self.lambda_energy = 0.1
        self.lambda_cov_diag = 0.005
        self.build_model()

    def build_model(self):
        self.dagmm = DaGMM(self.gmm_k)
        self.optimizer = torch.optim.Adam(self.dagmm.parameters(), lr=self.lr)
        if torch.cuda.is_available():
            self.dagmm.cuda()

    def dagmm_step(self, input_data):
        self.dagmm.train()
        enc, dec, z, gamma = self.dagmm(input_data)
        total_loss, sample_energy, recon_error, cov_diag = self.dagmm.loss_function(
            input_data, dec, z, gamma, self.lambda_energy, self.lambda_cov_diag)
        self.optimizer.zero_grad()
        total_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.dagmm.parameters(), 5)
        self.optimizer.step()
        return recon_error

    def train(self):
        losses = []
        loader = torch.utils.data.DataLoader(self.data, batch_size=self.batch_size, shuffle=True)
        for e in range(self.num_epochs):
            for input_data, _ in loader:
                input_data = to_var(input_data)
                losses.append(self.dagmm_step(input_data).item())
        return losses


torch.manual_seed(0)
features = torch.randn(256, 16) * torch.linspace(0.5, 2.0, 16)
dataset = torch.utils.data.TensorDataset(features, torch.zeros(256))
solver = Solver(dataset)
losses = solver.train()
device = next(solver.dagmm.parameters()).device
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
