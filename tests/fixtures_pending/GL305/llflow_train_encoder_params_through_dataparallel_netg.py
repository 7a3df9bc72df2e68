# source: https://github.com/wyf0912/LLFlow/issues/19
# LLFlow (low-light enhancement with a conditional normalizing flow): `LLFlowModel.__init__`
# builds `self.netG` (a flow whose condition encoder is the attribute `RRDB`) and, when the
# option file lists several `gpu_ids`, wraps it: `self.netG = DataParallel(self.netG,
# opt['gpu_ids'])`. train.py then prints the parameter counts with
# `model.netG.RRDB.parameters()`, and `optimize_parameters` logs the same counts once after the
# first backward through `self.netG.RRDB`: on a multi-GPU run training stops with
# "AttributeError: 'DataParallel' object has no attribute 'RRDB'" (the maintainer: the line can be
# deleted). The flow and its encoder are tiny stand-ins and the images are synthetic; the AMP
# GradScaler of the trainer is kept (disabled off CUDA). With one GPU or none the network is not
# wrapped, so the script trains here; `gpulint run --gpus 2` fails with the reported error.
import json
import logging
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler
from torch.nn.parallel import DataParallel, DistributedDataParallel

logger = logging.getLogger("base")


class RRDBNet(nn.Module):
    def __init__(self, in_nc=3, nf=8):
        super().__init__()
        self.conv_first = nn.Conv2d(in_nc, nf, 3, padding=1)
        self.body = nn.Sequential(nn.LeakyReLU(0.2), nn.Conv2d(nf, nf, 3, padding=1))

    def forward(self, lr):
        fea = self.conv_first(lr)
        return fea + self.body(fea)


class LLFlow(nn.Module):
    def __init__(self, in_nc=3, nf=8):
        super().__init__()
        self.RRDB = RRDBNet(in_nc, nf)
        self.RRDB_training = True
        self.flow = nn.Conv2d(in_nc + nf, 2 * in_nc, 3, padding=1)

    def forward(self, gt, lr):
        cond = self.RRDB(lr)
        stats = self.flow(torch.cat([gt, cond], dim=1))
        log_scale, shift = stats.chunk(2, dim=1)
        log_scale = torch.tanh(log_scale)
        z = (gt - shift) * torch.exp(-log_scale)
        nll = 0.5 * (z ** 2).mean(dim=(1, 2, 3)) + log_scale.mean(dim=(1, 2, 3))
        return z, nll


class BaseModel:
    def __init__(self, opt):
        self.opt = opt
        self.device = torch.device("cuda" if opt["gpu_ids"] is not None else "cpu")
        self.is_train = opt["is_train"]
        self.schedulers = []
        self.optimizers = []


class LLFlowModel(BaseModel):
    def __init__(self, opt, step):
        super().__init__(opt)
        self.already_print_params_num = False
        self.netG = LLFlow().to(self.device)
        if opt["gpu_ids"] is not None and len(opt["gpu_ids"]) > 0:
            if opt["dist"]:
                self.netG = DistributedDataParallel(self.netG, device_ids=[torch.cuda.current_device()])
            elif len(opt["gpu_ids"]) > 1:
                self.netG = DataParallel(self.netG, opt["gpu_ids"])
            else:
                self.netG.cuda()
        if self.is_train:
            self.netG.train()
            self.init_optimizer_and_scheduler(opt["train"])
            self.log_dict = OrderedDict()

    def init_optimizer_and_scheduler(self, train_opt):
        optim_params_RRDB = []
        optim_params_other = []
        for k, v in self.netG.named_parameters():
            if v.requires_grad:
                if "RRDB." in k:
                    optim_params_RRDB.append(v)
                else:
                    optim_params_other.append(v)
        self.optimizer_G = torch.optim.Adam(
            [
                {"params": optim_params_other, "lr": train_opt["lr_G"]},
                {"params": optim_params_RRDB, "lr": train_opt.get("lr_RRDB", train_opt["lr_G"])},
            ]
        )
        self.scaler = GradScaler(enabled=self.device.type == "cuda")
        self.optimizers.append(self.optimizer_G)

    def feed_data(self, data):
        self.var_L = data["LQ"].to(self.device)
        self.real_H = data["GT"].to(self.device)

    def optimize_parameters(self, step):
        self.netG.train()
        self.optimizer_G.zero_grad()
        z, nll = self.netG(gt=self.real_H, lr=self.var_L)
        total_loss = torch.mean(nll)
        self.scaler.scale(total_loss).backward()
        if not self.already_print_params_num:
            logger.info("Parameters of full network %.4f and encoder %.4f" % (
                sum([m.numel() for m in self.netG.parameters() if m.grad is not None]) / 1e6,
                sum([m.numel() for m in self.netG.RRDB.parameters() if m.grad is not None]) / 1e6))  # expect: GL305
            self.already_print_params_num = True
        self.scaler.step(self.optimizer_G)
        self.scaler.update()
        return total_loss.item()


def create_model(opt, step=0):
    return LLFlowModel(opt, step)


def main():
    torch.manual_seed(0)
    n_gpu = torch.cuda.device_count()
    opt = {
        "gpu_ids": list(range(n_gpu)) if n_gpu > 0 else None,
        "dist": False,
        "is_train": True,
        "train": {"lr_G": 5e-3, "niter": 60},
    }
    g = torch.Generator().manual_seed(1)
    gt = torch.rand(32, 3, 8, 8, generator=g)
    lq = gt * 0.2 + 0.02 * torch.randn(32, 3, 8, 8, generator=g)

    model = create_model(opt, 0)
    print("Parameters of full network %.4f and encoder %.4f" % (
        sum([m.numel() for m in model.netG.parameters()]) / 1e6,
        sum([m.numel() for m in model.netG.RRDB.parameters()]) / 1e6))  # expect: GL305

    losses = []
    for current_step in range(opt["train"]["niter"]):
        idx = torch.arange(current_step % 4 * 8, current_step % 4 * 8 + 8)
        model.feed_data({"LQ": lq[idx], "GT": gt[idx]})
        losses.append(model.optimize_parameters(current_step))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device.type}))


if __name__ == "__main__":
    main()
