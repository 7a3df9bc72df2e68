# source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/22
# fixture: static (needs several GPUs: with --gpu_ids 1 the legacy CUDA tensors land on cuda:0)
# pix2pix-style model class of the 2017 code: networks moved with `.cuda(gpu_ids[0])`, while the
# input buffers and GANLoss's target tensors are made with `self.Tensor = torch.cuda.FloatTensor`,
# which allocates on the current device (GPU 0); `--gpu_ids 1` mixes the two GPUs.
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn


class GANLoss(nn.Module):
    def __init__(self, use_lsgan=True, target_real_label=1.0, target_fake_label=0.0, tensor=torch.FloatTensor):
        super().__init__()
        self.real_label = target_real_label
        self.fake_label = target_fake_label
        self.real_label_var = None
        self.fake_label_var = None
        self.Tensor = tensor
        self.loss = nn.MSELoss() if use_lsgan else nn.BCELoss()

    def get_target_tensor(self, input, target_is_real):
        if target_is_real:
            if self.real_label_var is None or self.real_label_var.numel() != input.numel():
                self.real_label_var = self.Tensor(input.size()).fill_(self.real_label)
            return self.real_label_var
        if self.fake_label_var is None or self.fake_label_var.numel() != input.numel():
            self.fake_label_var = self.Tensor(input.size()).fill_(self.fake_label)
        return self.fake_label_var

    def __call__(self, input, target_is_real):
        target_tensor = self.get_target_tensor(input, target_is_real)
        return self.loss(input, target_tensor)


def define_net(in_dim, out_dim, gpu_ids):
    net = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, out_dim))
    if len(gpu_ids) > 0:
        net.cuda(gpu_ids[0])
    return net


class Pix2PixModel:
    def initialize(self, opt):
        self.gpu_ids = opt.gpu_ids
        self.Tensor = torch.cuda.FloatTensor if self.gpu_ids else torch.Tensor
        self.input_A = self.Tensor(opt.batchSize, 8)
        self.input_B = self.Tensor(opt.batchSize, 8)
        self.netG = define_net(8, 8, self.gpu_ids)
        self.netD = define_net(16, 1, self.gpu_ids)
        self.criterionGAN = GANLoss(use_lsgan=True, tensor=self.Tensor)
        self.criterionL1 = nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=opt.lr, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=opt.lr, betas=(0.5, 0.999))

    def set_input(self, input):
        self.input_A.resize_(input["A"].size()).copy_(input["A"])
        self.input_B.resize_(input["B"].size()).copy_(input["B"])

    def forward(self):
        self.real_A = self.input_A
        self.fake_B = self.netG(self.real_A)  # expect: GL116
        self.real_B = self.input_B

    def backward_D(self):
        pred_fake = self.netD(torch.cat((self.real_A, self.fake_B), 1).detach())
        pred_real = self.netD(torch.cat((self.real_A, self.real_B), 1))
        self.loss_D = (self.criterionGAN(pred_fake, False) + self.criterionGAN(pred_real, True)) * 0.5
        self.loss_D.backward()

    def backward_G(self):
        pred_fake = self.netD(torch.cat((self.real_A, self.fake_B), 1))
        self.loss_G_L1 = self.criterionL1(self.fake_B, self.real_B) * 10.0
        self.loss_G = self.criterionGAN(pred_fake, True) + self.loss_G_L1
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu_ids", type=str, default="0" if torch.cuda.is_available() else "-1")
    parser.add_argument("--batchSize", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    opt = parser.parse_args()
    opt.gpu_ids = [int(s) for s in opt.gpu_ids.split(",") if int(s) >= 0]

    torch.manual_seed(0)
    mix = torch.randn(8, 8)
    model = Pix2PixModel()
    model.initialize(opt)
    losses = []
    for i in range(150):
        A = torch.randn(opt.batchSize, 8)
        model.set_input({"A": A, "B": A @ mix})
        model.optimize_parameters()
        losses.append(model.loss_G_L1.item())
    device = "cuda" if opt.gpu_ids else "cpu"
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))


if __name__ == "__main__":
    main()
