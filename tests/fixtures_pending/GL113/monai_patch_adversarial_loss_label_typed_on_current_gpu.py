# source: https://github.com/Project-MONAI/GenerativeModels/pull/371
# The patch-adversarial loss builds its target with `torch.tensor(1).fill_(label).type(input.type())`.
# `.type("torch.cuda.FloatTensor")` puts the label on the *current* CUDA device (cuda:0 unless
# `torch.cuda.set_device` was called), not on the device of `input`; training on `--gpu 1` then
# fails in the least-squares criterion. On the CPU and on cuda:0 the script trains. Same effect as
# an index-less `.cuda()` in a method that `forward` calls (GL113).
# (No `# fails-on-cuda:` header: the crash needs a second GPU; reproduce with
#  `gpulint run --gpus 2 <file> --gpu 1`.)
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchAdversarialLoss(nn.Module):
    def __init__(self, real_label=1.0, fake_label=0.0):
        super().__init__()
        self.real_label = real_label
        self.fake_label = fake_label

    def get_target_tensor(self, input, target_is_real):
        filling_label = self.real_label if target_is_real else self.fake_label
        label_tensor = torch.tensor(1).fill_(filling_label).type(input.type())  # expect: GL113
        label_tensor.requires_grad_(False)
        return label_tensor.expand_as(input)

    def forward(self, input, target_is_real):
        target = self.get_target_tensor(input, target_is_real)
        return F.mse_loss(input, target)


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(1, 8, 3, padding=1)
        self.dec = nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, x):
        return torch.tanh(self.dec(F.relu(self.enc(x))))


class PatchDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 8, 4, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x):
        return self.net(x)


parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device(f"cuda:{args.gpu}" if torch.cuda.is_available() else "cpu")
model = AutoEncoder().to(device)
discriminator = PatchDiscriminator().to(device)
adv_loss = PatchAdversarialLoss()
optimizer_g = torch.optim.Adam(model.parameters(), lr=2e-3)
optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=2e-3)
images_all = torch.rand(32, 1, 16, 16) * 2 - 1
losses = []
for epoch in range(30):
    images = images_all[(epoch % 4) * 8:(epoch % 4) * 8 + 8].to(device)
    reconstruction = model(images)
    recon_loss = F.l1_loss(reconstruction, images)
    generator_loss = adv_loss(discriminator(reconstruction), target_is_real=True)
    loss_g = recon_loss + 0.01 * generator_loss
    optimizer_g.zero_grad()
    loss_g.backward()
    optimizer_g.step()

    loss_d_fake = adv_loss(discriminator(reconstruction.detach()), target_is_real=False)
    loss_d_real = adv_loss(discriminator(images), target_is_real=True)
    loss_d = 0.5 * (loss_d_fake + loss_d_real)
    optimizer_d.zero_grad()
    loss_d.backward()
    optimizer_d.step()
    losses.append(recon_loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
