# source: https://github.com/princeton-vl/pytorch_stacked_hourglass/issues/44
# pytorch_stacked_hourglass: task/pose.py's make_network() returns a `make_train(batch_id, config,
# phase, **inputs)` closure that train.py's train() calls for every batch of the 'train' and then
# the 'valid' phase. It starts with `net = net.train()` whatever the phase (the Trainer wrapper only
# returns its loss in training mode), so the validation batches run with BatchNorm in training mode:
# their statistics overwrite the running mean/var the model is evaluated with later. The
# maintainer's fix puts the BatchNorm2d modules in eval mode for the 'valid' phase (the Trainer
# stays in training mode so the loss is still returned).
import json

import torch
import torch.nn as nn


class PoseNet(nn.Module):
    def __init__(self, inp_dim, oup_dim):
        super().__init__()
        self.pre = nn.Sequential(nn.Conv2d(1, inp_dim, 3, padding=1), nn.BatchNorm2d(inp_dim), nn.ReLU())
        self.hg = nn.Sequential(nn.Conv2d(inp_dim, inp_dim, 3, padding=1), nn.BatchNorm2d(inp_dim), nn.ReLU())
        self.outs = nn.Conv2d(inp_dim, oup_dim, 1)

    def forward(self, imgs):
        return self.outs(self.hg(self.pre(imgs)))

    def calc_loss(self, combined_hm_preds, heatmaps):
        return ((combined_hm_preds[0] - heatmaps) ** 2).mean(dim=(1, 2, 3))


class Trainer(nn.Module):
    def __init__(self, model, calc_loss):
        super().__init__()
        self.model = model
        self.calc_loss = calc_loss

    def forward(self, imgs, **labels):
        if not self.training:
            return self.model(imgs)
        combined_hm_preds = [self.model(imgs)]
        loss = self.calc_loss(combined_hm_preds=combined_hm_preds, **labels)
        return combined_hm_preds + [loss]


def make_network(configs, device):
    train_cfg = configs["train"]
    pose_net = PoseNet(16, 4).to(device)
    configs["inference"]["net"] = Trainer(pose_net, pose_net.calc_loss)
    train_cfg["optimizer"] = torch.optim.Adam(configs["inference"]["net"].parameters(), train_cfg["learning_rate"])

    def make_train(batch_id, config, phase, **inputs):
        inputs = {k: v.to(device) for k, v in inputs.items()}
        net = config["inference"]["net"]
        config["batch_id"] = batch_id
        net = net.train()
        result = net(inputs["imgs"], heatmaps=inputs["heatmaps"])
        loss = torch.mean(result[-1])
        config["losses"][phase].append(loss.item())
        if phase == "train":
            optimizer = train_cfg["optimizer"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return None
    return make_train


def make_batch(gen, n):
    imgs = torch.randn(n, 1, 16, 16, generator=gen) * 3 + 1
    heatmaps = torch.cat([imgs.clamp(min=0), (-imgs).clamp(min=0), imgs.abs(), imgs.tanh()], dim=1)
    return imgs, heatmaps


def train(train_func, train_loader, valid_loader, config):
    while config["train"]["epoch"] < config["train"]["epoch_num"]:
        for phase in ["train", "valid"]:
            loader = train_loader if phase == "train" else valid_loader
            for i, (images, heatmaps) in enumerate(loader):  # expect: GL404
                datas = {"imgs": images, "heatmaps": heatmaps}
                train_func(i, config, phase, **datas)
        config["train"]["epoch"] += 1


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = {"train": {"learning_rate": 1e-2, "epoch": 0, "epoch_num": 8}, "inference": {},
              "losses": {"train": [], "valid": []}}
    func = make_network(config, device)
    train_loader = [make_batch(gen, 8) for _ in range(6)]
    valid_loader = [make_batch(gen, 8) for _ in range(2)]
    train(func, train_loader, valid_loader, config)
    losses = config["losses"]["train"]
    return losses, device


losses, device = main()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
