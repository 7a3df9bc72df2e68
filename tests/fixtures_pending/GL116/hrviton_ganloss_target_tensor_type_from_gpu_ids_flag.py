# source: https://github.com/sangyun884/HR-VITON/issues/47
# HR-VITON train_condition.py: the condition generator `tocg` and the discriminator `D` are moved to
# the GPU, every input of the step is moved there too, but the GAN criterion is built as
# `GANLoss(use_lsgan=True, tensor=torch.cuda.FloatTensor if opt.gpu_ids else torch.Tensor)`, and
# `--gpu_ids` defaults to "". GANLoss (networks.py, the pix2pixHD one) makes its label tensor with
# `self.Tensor(input.size()).fill_(label)`, so without the flag the label is a CPU tensor and
# `loss += self.loss(pred, target_tensor)` fails in `mse_loss`: "Expected all tensors to be on the
# same device, but found at least two devices, cuda:0 and cpu!". Here: a tiny generator and a
# two-scale discriminator, synthetic segmentation maps, the generator's and discriminator's steps of
# the original; the models go to the GPU when there is one.
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class GANLoss(nn.Module):
    def __init__(self, use_lsgan=True, target_real_label=1.0, target_fake_label=0.0, tensor=torch.FloatTensor):
        super(GANLoss, self).__init__()
        self.real_label = target_real_label
        self.fake_label = target_fake_label
        self.real_label_var = None
        self.fake_label_var = None
        self.Tensor = tensor
        if use_lsgan:
            self.loss = nn.MSELoss()
        else:
            self.loss = nn.BCELoss()

    def get_target_tensor(self, input, target_is_real):
        if target_is_real:
            if self.real_label_var is None or self.real_label_var.numel() != input.numel():
                real_tensor = self.Tensor(input.size()).fill_(self.real_label)
                self.real_label_var = Variable(real_tensor, requires_grad=False)
            return self.real_label_var
        if self.fake_label_var is None or self.fake_label_var.numel() != input.numel():
            fake_tensor = self.Tensor(input.size()).fill_(self.fake_label)
            self.fake_label_var = Variable(fake_tensor, requires_grad=False)
        return self.fake_label_var

    def __call__(self, input, target_is_real):
        if isinstance(input[0], list):
            loss = 0
            for input_i in input:
                pred = input_i[-1]
                target_tensor = self.get_target_tensor(pred, target_is_real)
                loss += self.loss(pred, target_tensor)  # expect: GL116
            return loss
        target_tensor = self.get_target_tensor(input[-1], target_is_real)
        return self.loss(input[-1], target_tensor)


class ConditionGenerator(nn.Module):
    def __init__(self, in1, in2, output_nc, ngf=16):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(in1, ngf, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(in2, ngf, 3, padding=1), nn.ReLU())
        self.seg = nn.Conv2d(2 * ngf, output_nc, 3, padding=1)

    def forward(self, input1, input2):
        return self.seg(torch.cat([self.enc1(input1), self.enc2(input2)], 1))


class MultiscaleDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=16, num_D=2):
        super().__init__()
        self.num_D = num_D
        for i in range(num_D):
            setattr(self, "layer" + str(i), nn.Sequential(
                nn.Conv2d(input_nc, ndf, 4, stride=2, padding=2), nn.LeakyReLU(0.2, True),
                nn.Conv2d(ndf, 1, 4, stride=1, padding=2)))
        self.downsample = nn.AvgPool2d(3, stride=2, padding=[1, 1], count_include_pad=False)

    def forward(self, input):
        result = []
        input_downsampled = input
        for i in range(self.num_D):
            model = getattr(self, "layer" + str(self.num_D - 1 - i))
            result.append([model(input_downsampled)])
            if i != self.num_D - 1:
                input_downsampled = self.downsample(input_downsampled)
        return result


def get_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpu_ids", default="")
    parser.add_argument("--fp16", action="store_true")
    parser.add_argument("--keep_step", type=int, default=60)
    parser.add_argument("--G_lr", type=float, default=0.002)
    parser.add_argument("--D_lr", type=float, default=0.002)
    parser.add_argument("--CElamda", type=float, default=10)
    parser.add_argument("--GANlambda", type=float, default=1)
    return parser.parse_args()


def next_batch(g, n=4, c=4, size=16):
    cloth = torch.rand(n, 3, size, size, generator=g)
    cloth_mask = (cloth.mean(1, keepdim=True) > 0.5).float()
    agnostic = torch.rand(n, c, size, size, generator=g)
    parse = agnostic.argmax(1)
    return {"cloth": cloth, "cloth_mask": cloth_mask, "parse_agnostic": agnostic,
            "parse": F.one_hot(parse, c).permute(0, 3, 1, 2).float(), "label": parse}


def train(opt, tocg, D, device):
    tocg.to(device)
    tocg.train()
    D.to(device)
    D.train()

    if opt.fp16:
        criterionGAN = GANLoss(use_lsgan=True, tensor=torch.cuda.HalfTensor)
    else:
        criterionGAN = GANLoss(use_lsgan=True, tensor=torch.cuda.FloatTensor if opt.gpu_ids else torch.Tensor)
    optimizer_G = torch.optim.Adam(tocg.parameters(), lr=opt.G_lr, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(D.parameters(), lr=opt.D_lr, betas=(0.5, 0.999))

    g = torch.Generator().manual_seed(0)
    losses = []
    for step in range(opt.keep_step):
        inputs = next_batch(g)
        c_paired = inputs["cloth"].to(device)
        cm_paired = inputs["cloth_mask"].to(device)
        parse_agnostic = inputs["parse_agnostic"].to(device)
        label = inputs["parse"].to(device)
        label_index = inputs["label"].to(device)

        input1 = torch.cat([c_paired, cm_paired], 1)
        input2 = parse_agnostic
        fake_segmap = tocg(input1, input2)
        CE_loss = F.cross_entropy(fake_segmap, label_index)

        fake_segmap_softmax = torch.softmax(fake_segmap, 1)
        pred_segmap = D(torch.cat((input1.detach(), input2.detach(), fake_segmap_softmax), dim=1))
        loss_G_GAN = criterionGAN(pred_segmap, True)

        fake_segmap_pred = D(torch.cat((input1.detach(), input2.detach(), fake_segmap_softmax.detach()), dim=1))
        real_segmap_pred = D(torch.cat((input1.detach(), input2.detach(), label), dim=1))
        loss_D = criterionGAN(fake_segmap_pred, False) + criterionGAN(real_segmap_pred, True)

        loss_G = CE_loss * opt.CElamda + loss_G_GAN * opt.GANlambda
        optimizer_G.zero_grad()
        loss_G.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        loss_D.backward()
        optimizer_D.step()
        losses.append(CE_loss.item())
    return losses


def main():
    opt = get_opt()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tocg = ConditionGenerator(in1=4, in2=4, output_nc=4)
    D = MultiscaleDiscriminator(input_nc=4 + 4 + 4)
    losses = train(opt, tocg, D, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
