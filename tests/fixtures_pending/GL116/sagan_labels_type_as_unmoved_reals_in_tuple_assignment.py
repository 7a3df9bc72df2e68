# source: https://github.com/elvisyjlin/SpatialAttentionGAN/issues/1 (fixed in commit 3d7ac55)
# `reals, labels = reals.to(device), labels.to(device).type_as(reals)`: the right-hand side is
# evaluated before either name is re-bound, so `type_as(reals)` sees the batch still on the host and
# converts the labels back to a CPU `FloatTensor`; the generator then concatenates GPU features with
# host attribute maps.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class AttentionMaskNet(nn.Module):
    def __init__(self, n_attrs, ch=8):
        super().__init__()
        self.conv = nn.Conv2d(3 + n_attrs, ch, 3, padding=1)
        self.out = nn.Conv2d(ch, 4, 3, padding=1)

    def forward(self, x, a):
        a = a[:, :, None, None].expand(-1, -1, x.size(2), x.size(3))
        h = F.relu(self.conv(torch.cat((x, a), dim=1)))
        y = self.out(h)
        return torch.tanh(y[:, :3]), torch.sigmoid(y[:, 3:])


class Generator(nn.Module):
    def __init__(self, n_attrs):
        super().__init__()
        self.AMN = AttentionMaskNet(n_attrs)

    def forward(self, x, a):
        y, mask = self.AMN(x, a)
        return mask * y + (1 - mask) * x, mask


class Discriminator(nn.Module):
    def __init__(self, n_attrs):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten())
        self.adv = nn.Linear(8 * 8 * 8, 1)
        self.cls = nn.Linear(8 * 8 * 8, n_attrs)

    def forward(self, x):
        h = self.body(x)
        return self.adv(h), self.cls(h)


def loop(loader):
    while True:
        for batch in loader:
            yield batch


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
n_attrs = 2
images = torch.rand(64, 3, 16, 16) * 2 - 1
attrs = (torch.rand(64, n_attrs) > 0.5).long()
train_data = loop(DataLoader(TensorDataset(images, attrs), batch_size=16, shuffle=True))
G, D = Generator(n_attrs).to(device), Discriminator(n_attrs).to(device)
G_opt = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
D_opt = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
losses = []
for it in range(40):
    reals, labels = next(train_data)
    reals, labels = reals.to(device), labels.to(device).type_as(reals)
    target_labels = 1 - labels

    fakes, _ = G(reals, target_labels)  # expect: GL116
    d_real, dc_real = D(reals)
    d_fake, _ = D(fakes.detach())
    d_loss = F.softplus(-d_real).mean() + F.softplus(d_fake).mean() + F.binary_cross_entropy_with_logits(dc_real, labels)  # expect: GL116
    D_opt.zero_grad()
    d_loss.backward()
    D_opt.step()

    fakes, mask = G(reals, target_labels)  # expect: GL116
    g_adv, g_cls = D(fakes)
    g_loss = F.softplus(-g_adv).mean() + F.binary_cross_entropy_with_logits(g_cls, target_labels) + F.l1_loss(fakes, reals)  # expect: GL116
    G_opt.zero_grad()
    g_loss.backward()
    G_opt.step()
    losses.append(d_loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
