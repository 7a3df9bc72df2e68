# source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/253
# pix2pix's model class saves its networks every few epochs with `save_networks()`. After commit
# e2b72f5 the helper first put each network back on `gpu_ids[0]` and then saved
# `net.cpu().state_dict()`: Module.cpu() moves the network in place, so after the first save
# the generator and the discriminator stay on the host while `set_input()` keeps moving every
# batch to the GPU. The next step fails (#254, #259: "Input type (CUDAFloatTensor) and weight
# type (CPUFloatTensor) should be the same"); ea3b646 swaps the two lines back (save on the
# host, then move to the GPU).
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile

import torch
import torch.nn as nn


class Pix2PixModel:
    def __init__(self, gpu_ids, save_dir):
        self.gpu_ids = gpu_ids
        self.save_dir = save_dir
        self.device = torch.device("cuda:{}".format(self.gpu_ids[0])) if self.gpu_ids else torch.device("cpu")
        self.netG = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1)).to(self.device)
        self.netD = nn.Sequential(nn.Conv2d(2, 8, 4, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, padding=1)).to(self.device)
        self.model_names = ["G", "D"]
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=2e-4, betas=(0.5, 0.999))

    def set_input(self, data):
        self.real_A = data["A"].to(self.device)
        self.real_B = data["B"].to(self.device)

    def forward(self):
        self.fake_B = self.netG(self.real_A)  # expect: GL116

    def optimize_parameters(self):
        self.forward()
        self.optimizer_D.zero_grad()
        pred_fake = self.netD(torch.cat((self.real_A, self.fake_B.detach()), 1))
        pred_real = self.netD(torch.cat((self.real_A, self.real_B), 1))
        loss_D = 0.5 * ((pred_fake ** 2).mean() + ((pred_real - 1) ** 2).mean())
        loss_D.backward()
        self.optimizer_D.step()

        self.optimizer_G.zero_grad()
        pred_fake = self.netD(torch.cat((self.real_A, self.fake_B), 1))
        self.loss_G_L1 = (self.fake_B - self.real_B).abs().mean()
        loss_G = 0.01 * ((pred_fake - 1) ** 2).mean() + self.loss_G_L1 * 100.0
        loss_G.backward()
        self.optimizer_G.step()

    def save_networks(self, epoch):
        for name in self.model_names:
            save_path = os.path.join(self.save_dir, "%s_net_%s.pth" % (epoch, name))
            net = getattr(self, "net" + name)
            if len(self.gpu_ids) > 0 and torch.cuda.is_available():
                net.cuda(self.gpu_ids[0])
                torch.save(net.cpu().state_dict(), save_path)
            else:
                torch.save(net.cpu().state_dict(), save_path)


torch.manual_seed(0)
A = torch.rand(32, 1, 8, 8)
B = 1.0 - A
gpu_ids = [0] if torch.cuda.is_available() else []
model = Pix2PixModel(gpu_ids, tempfile.mkdtemp())
losses = []
for epoch in range(1, 7):
    for i in range(0, 32, 8):
        model.set_input({"A": A[i:i + 8], "B": B[i:i + 8]})
        model.optimize_parameters()
        losses.append(model.loss_G_L1.item())
    if epoch % 5 == 0:
        print("saving the model at the end of epoch %d" % epoch)
        model.save_networks(epoch)
model.set_input({"A": A[:8], "B": B[:8]})
model.optimize_parameters()
losses.append(model.loss_G_L1.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device.type}))
