# source: https://github.com/VITA-Group/EnlightenGAN/issues/30
# EnlightenGAN's model classes (models/base_model.py, single_model.py, networks.py): `define_G()`
# moves the generator to `gpu_ids[0]` and wraps it in `torch.nn.DataParallel(netG, gpu_ids)` when
# GPU ids are given; `BaseModel.save_network(network, label, epoch, gpu_ids)` writes
# `torch.save(network.cpu().state_dict(), path)` from that wrapper, so the checkpoint keys are
# "module.conv1_1.weight", ...; `load_network()` feeds `torch.load(path)` to `load_state_dict` of
# a generator built by the same `define_G()`. Predicting on a CPU machine (`gpu_ids=[]`, no
# wrapper) raises KeyError 'unexpected key "module.conv1_1.weight" in state_dict' (the reporter
# rewrote the keys without the prefix). Training here uses the GPU ids when CUDA is there, then a
# CPU-side predictor loads the saved generator the way predict.py does. The U-Net generator is a
# two-layer stand-in and the low/normal-light image pairs are synthetic.
# fails-on-cuda: Unexpected key(s) in state_dict
import json
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)


class TinyUnetGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1_1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv1_2 = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, x):
        return x + self.conv1_2(torch.relu(self.conv1_1(x)))


def define_G(gpu_ids):
    netG = TinyUnetGenerator()
    if len(gpu_ids) > 0:
        netG.cuda(device=gpu_ids[0])
        netG = torch.nn.DataParallel(netG, gpu_ids)
    return netG


class BaseModel:
    def initialize(self, opt):
        self.opt = opt
        self.gpu_ids = opt["gpu_ids"]
        self.save_dir = opt["checkpoints_dir"]

    def save_network(self, network, network_label, epoch_label, gpu_ids):
        save_filename = "%s_net_%s.pth" % (epoch_label, network_label)
        save_path = os.path.join(self.save_dir, save_filename)
        torch.save(network.cpu().state_dict(), save_path)  # expect: GL304
        if len(gpu_ids) and torch.cuda.is_available():
            network.cuda(device=gpu_ids[0])

    def load_network(self, network, network_label, epoch_label):
        save_filename = "%s_net_%s.pth" % (epoch_label, network_label)
        save_path = os.path.join(self.save_dir, save_filename)
        network.load_state_dict(torch.load(save_path, map_location="cpu"))


class SingleModel(BaseModel):
    def initialize(self, opt):
        BaseModel.initialize(self, opt)
        self.device = torch.device("cuda:%d" % self.gpu_ids[0]) if self.gpu_ids else torch.device("cpu")
        self.netG_A = define_G(self.gpu_ids)
        if opt["isTrain"]:
            self.optimizer_G = torch.optim.Adam(self.netG_A.parameters(), lr=opt["lr"], betas=(0.5, 0.999))
            self.criterion = nn.L1Loss()
        else:
            self.load_network(self.netG_A, "G_A", opt["which_epoch"])

    def set_input(self, low, normal):
        self.real_A = low.to(self.device)
        self.real_B = normal.to(self.device)

    def optimize_parameters(self):
        self.optimizer_G.zero_grad()
        self.fake_B = self.netG_A(self.real_A)
        self.loss_G = self.criterion(self.fake_B, self.real_B)
        self.loss_G.backward()
        self.optimizer_G.step()
        return self.loss_G.item()

    def predict(self, low):
        with torch.no_grad():
            return self.netG_A(low.to(self.device)).cpu()

    def save(self, label):
        self.save_network(self.netG_A, "G_A", label, self.gpu_ids)


def main():
    ckpt_dir = tempfile.mkdtemp()
    gpu_ids = [0] if torch.cuda.is_available() else []
    normal = torch.rand(64, 3, 16, 16)
    low = normal * 0.3
    opt = {"gpu_ids": gpu_ids, "checkpoints_dir": ckpt_dir, "isTrain": True, "lr": 1e-2, "which_epoch": "latest"}
    model = SingleModel()
    model.initialize(opt)
    losses = []
    for epoch in range(15):
        for i in range(0, 64, 16):
            model.set_input(low[i:i + 16], normal[i:i + 16])
            losses.append(model.optimize_parameters())
    model.save("latest")

    # predict.py on a CPU machine: no GPU ids, so no DataParallel wrapper
    predictor = SingleModel()
    predictor.initialize(dict(opt, gpu_ids=[], isTrain=False))
    out = predictor.predict(low[:4])
    print("prediction", tuple(out.shape))
    device = "cuda" if gpu_ids else "cpu"
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))


if __name__ == "__main__":
    main()
