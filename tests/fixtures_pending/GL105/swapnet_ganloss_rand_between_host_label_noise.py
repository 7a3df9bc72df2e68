# source: https://github.com/andrewjong/SwapNet/issues/47
# SwapNet's GAN models (models/base_gan.py, modules/loss.py): GANLoss keeps its smoothed label
# ranges as registered buffers and is moved with the model's criterion to self.device; with
# label smoothing, get_target_tensor() unpacks the (low, high) buffer into two 0-dim GPU tensors
# and rand_between() draws `torch.rand(1)` on the CPU and multiplies it by `high - low`
# ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and
# cpu!" in rand_between, from backward_D). The `.to(self.real_label.device)` comes too late.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
from torch import nn


class GANLoss(nn.Module):
    default_smooth_real = (0.7, 1.1)
    default_smooth_fake = (0.0, 0.3)

    def __init__(self, gan_mode, smooth_labels=True):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(self.default_smooth_real if smooth_labels else 1.0))
        self.register_buffer("fake_label", torch.tensor(self.default_smooth_fake if smooth_labels else 0.0))
        self.gan_mode = gan_mode
        self.loss = nn.MSELoss() if gan_mode == "lsgan" else nn.BCEWithLogitsLoss()

    @staticmethod
    def rand_between(low, high, normal=False):
        rand_func = torch.randn if normal else torch.rand
        return rand_func(1) * (high - low) + low  # expect: GL105

    def get_target_tensor(self, prediction, target_is_real):
        if target_is_real:
            if len(self.real_label) == 2:
                low, high = self.real_label
                target_tensor = GANLoss.rand_between(low, high).to(self.real_label.device)
            else:
                target_tensor = self.real_label
        else:
            if len(self.fake_label) == 2:
                low, high = self.fake_label
                target_tensor = GANLoss.rand_between(low, high).to(self.fake_label.device)
            else:
                target_tensor = self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        target_tensor = self.get_target_tensor(prediction, target_is_real)
        return self.loss(prediction, target_tensor)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        return self.net(x)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


class BaseGAN:
    def __init__(self, device):
        self.device = device
        self.net_generator = Generator().to(self.device)
        self.net_discriminator = Discriminator().to(self.device)
        self.criterion_GAN = GANLoss("lsgan").to(self.device)
        self.optimizer_G = torch.optim.Adam(self.net_generator.parameters(), lr=2e-3)
        self.optimizer_D = torch.optim.Adam(self.net_discriminator.parameters(), lr=2e-3)

    def set_input(self, batch):
        self.inputs = batch[0].to(self.device)
        self.targets = batch[1].to(self.device)

    def forward(self):
        self.fakes = self.net_generator(self.inputs)

    def backward_D(self):
        pred_fake = self.net_discriminator(self.fakes.detach())
        self.loss_D_fake = self.criterion_GAN(pred_fake, False)
        pred_real = self.net_discriminator(self.targets)
        self.loss_D_real = self.criterion_GAN(pred_real, True)
        self.loss_D = 0.5 * (self.loss_D_fake + self.loss_D_real)
        self.loss_D.backward()

    def backward_G(self):
        pred_fake = self.net_discriminator(self.fakes)
        self.loss_G_adv = self.criterion_GAN(pred_fake, True)
        self.loss_G_l1 = nn.functional.l1_loss(self.fakes, self.targets)
        self.loss_G = self.loss_G_adv + 10.0 * self.loss_G_l1
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(128, 8)
y = x.flip(1) * 0.5
dataset = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16, shuffle=True)
model = BaseGAN(device)
losses = []
for epoch in range(5):
    for batch in dataset:
        model.set_input(batch)
        model.optimize_parameters()
        losses.append(model.loss_G_l1.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": device.type}))
