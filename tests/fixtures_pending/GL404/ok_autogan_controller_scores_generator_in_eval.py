# source: https://github.com/TAMU-VITA/AutoGAN/blob/e481c7f25ce3a3d0b5ff4a1a9ab4cd6ff0cbd76b/functions.py
# Hard negative (PRECISION40, GL404 at `get_is`): AutoGAN's architecture search alternates
# `train_shared(...)`, which trains the shared generator and starts with
# `gen_net = gen_net.train()`, and `train_controller(...)`, which trains the RL controller: its
# loop scores each sampled architecture with `get_is(args, gen_net, ...)`, whose first line is
# `gen_net = gen_net.eval()`. The loop that steps an optimizer there steps the controller's, and
# the generator is only evaluated in it; the next `train_shared` puts the generator back in
# training mode before its own steps. Nothing trains in eval mode. (The evaluation itself runs
# with autograd on, which GL403 reports, rightly; this file keeps that shape.)
import json

import torch
import torch.nn as nn


def get_is(gen_net, num_batches, latent_dim):
    # eval mode
    gen_net = gen_net.eval()
    score = 0.0
    for _ in range(num_batches):
        z = torch.randn(4, latent_dim, device=next(gen_net.parameters()).device)
        gen_imgs = gen_net(z)  # expect: GL403
        score += gen_imgs.detach().std().item()
    return score / num_batches


def train_shared(gen_net, dis_net, gen_optimizer, dis_optimizer, steps, latent_dim, device, losses):
    gen_net = gen_net.train()
    dis_net = dis_net.train()
    for step in range(steps):
        real = torch.randn(8, 16, device=device) * 0.5 + 1.0
        z = torch.randn(8, latent_dim, device=device)
        d_loss = torch.relu(1.0 - dis_net(real)).mean() + torch.relu(1.0 + dis_net(gen_net(z).detach())).mean()
        dis_optimizer.zero_grad()
        d_loss.backward()
        dis_optimizer.step()
        g_loss = -dis_net(gen_net(z)).mean()
        gen_optimizer.zero_grad()
        g_loss.backward()
        gen_optimizer.step()
        losses.append(d_loss.item())


def train_controller(controller, ctrl_optimizer, gen_net, ctrl_steps, latent_dim, device):
    controller.train()
    gen_net.eval()
    for step in range(ctrl_steps):
        logits = controller(torch.zeros(1, 4, device=device))
        dist = torch.distributions.Categorical(logits=logits)
        arch = dist.sample()
        reward = get_is(gen_net, 2, latent_dim)
        loss = -(dist.log_prob(arch) * reward).sum()
        ctrl_optimizer.zero_grad()
        loss.backward()
        ctrl_optimizer.step()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
latent_dim = 8
gen_net = nn.Sequential(nn.Linear(latent_dim, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 16)).to(device)
dis_net = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1)).to(device)
controller = nn.Linear(4, 3).to(device)
gen_optimizer = torch.optim.Adam(gen_net.parameters(), lr=1e-3, betas=(0.0, 0.9))
dis_optimizer = torch.optim.Adam(dis_net.parameters(), lr=1e-3, betas=(0.0, 0.9))
ctrl_optimizer = torch.optim.Adam(controller.parameters(), lr=3.5e-4)
losses = []
for search_iter in range(4):
    train_shared(gen_net, dis_net, gen_optimizer, dis_optimizer, 10, latent_dim, device, losses)
    train_controller(controller, ctrl_optimizer, gen_net, 2, latent_dim, device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
