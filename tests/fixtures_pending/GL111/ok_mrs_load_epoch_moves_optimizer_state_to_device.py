# source: https://github.com/bohaohuang/mrs/pull/47
# mrs (aerial-image segmentation): `train_model(args, device)` builds the model, makes the
# optimizer from `model.set_train_params(...)` (encoder and decoder parameter groups with their
# own learning rates) and, when resuming, calls the helper `load_epoch(save_dir, resume_epoch,
# model, optm)`, which reads the snapshot onto the CPU and runs `optm.load_state_dict(...)`. Only
# afterwards does `train_model` call `model.to(device)`, so the Adam moments are restored on the CPU
# next to parameters that then move to the GPU, and the first `optm.step()` of the resumed run
# fails. The PR passes `device` to `load_epoch` and moves every tensor of `optm.state` to it after
# the load. Hard negative, the PR's change: `load_epoch` takes `device` and moves every tensor of
# `optm.state` to it after `optm.load_state_dict(...)`. (A two-layer conv encoder/decoder over synthetic 16x16 tiles; the tensorboard writer
# and the transforms are dropped, and `scheduler.step()` runs at the end of the epoch.)
import json
import os
import tempfile

import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


class LossClass(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = 0
        self.cnt = 0

    def update(self, loss, size):
        self.loss += loss.item() * size
        self.cnt += size

    def reset(self):
        self.loss = 0
        self.cnt = 0

    def get_loss(self):
        return self.loss / self.cnt


class CrossEntropyLoss(LossClass):
    def __init__(self, class_weights=(1.0, 1.0)):
        super().__init__()
        self.name = "xent"
        self.criterion = nn.CrossEntropyLoss(torch.tensor([float(a) for a in class_weights]))

    def forward(self, pred, lbl):
        return self.criterion(pred, lbl)


class Base(nn.Module):
    def set_train_params(self, learn_rate):
        return [
            {"params": self.encoder.parameters(), "lr": learn_rate[0]},
            {"params": self.decoder.parameters(), "lr": learn_rate[1]},
        ]

    def step(self, data_loader, device, optm, phase, criterions):
        for img_cnt, (image, label) in enumerate(data_loader):
            image = image.to(device)
            label = label.long().to(device)
            optm.zero_grad()
            if phase == "train":
                pred = self.forward(image)
            else:
                with torch.no_grad():
                    pred = self.forward(image)
            loss_all = 0
            for c in criterions:
                loss = c(pred, label)
                if phase == "train":
                    loss_all += loss
                c.update(loss, image.size(0))
            if phase == "train":
                loss_all.backward()
                optm.step()
        loss_dict = {}
        for c in criterions:
            loss_dict[c.name] = c.get_loss()
            c.reset()
        return loss_dict


class UNet(Base):
    def __init__(self, n_class=2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.decoder = nn.Conv2d(8, n_class, 3, padding=1)

    def forward(self, x):
        return self.decoder(self.encoder(x))


def create_model(args):
    return UNet(n_class=2)


def create_optimizer(optm_name, train_params, lr):
    if optm_name == "sgd":
        return optim.SGD(train_params, lr=lr, momentum=0.9)
    return optim.Adam(train_params, lr=lr)


def create_loss(args, device=None):
    return [CrossEntropyLoss()]


def save(model, epoch, optm, loss_dict, save_file):
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "opt_dict": optm.state_dict(), "loss": loss_dict}, save_file)


def load_epoch(save_dir, resume_epoch, model, optm, device):
    checkpoint = torch.load(
        os.path.join(save_dir, "epoch-" + str(resume_epoch - 1) + ".pth.tar"),
        map_location=lambda storage, loc: storage)
    model.load_state_dict(checkpoint["state_dict"])
    optm.load_state_dict(checkpoint["opt_dict"])
    for state in optm.state.values():
        for k, v in state.items():
            if isinstance(v, torch.Tensor):
                state[k] = v.to(device)


def make_loader(n, seed, shuffle):
    g = torch.Generator().manual_seed(seed)
    image = torch.randn(n, 3, 16, 16, generator=g)
    label = (image[:, 0] + 0.5 * image[:, 1] > 0).long()
    return DataLoader(TensorDataset(image, label), batch_size=8, shuffle=shuffle)


def train_model(args, device):
    model = create_model(args)
    train_params = model.set_train_params((args["optimizer"]["learn_rate_encoder"], args["optimizer"]["learn_rate_decoder"]))
    optm = create_optimizer(args["optimizer"]["name"], train_params, args["optimizer"]["learn_rate_encoder"])
    criterions = create_loss(args, device=device)
    scheduler = optim.lr_scheduler.MultiStepLR(optm, milestones=[50], gamma=0.1)

    if args["trainer"]["resume_epoch"] == 0:
        print("Training from scratch ...")
    else:
        print("Resume training from epoch {} ...".format(args["trainer"]["resume_epoch"]))
        load_epoch(args["save_dir"], args["trainer"]["resume_epoch"], model, optm, device)

    model.to(device)
    for c in criterions:
        c.to(device)

    train_val_loaders = {"train": make_loader(64, 0, True), "valid": make_loader(32, 1, False)}
    history = []
    for epoch in range(args["trainer"]["resume_epoch"], args["trainer"]["epochs"]):
        for phase in ["train", "valid"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            loss_dict = model.step(train_val_loaders[phase], device, optm, phase, criterions)
            print(epoch, phase, loss_dict)
            if phase == "train":
                history.append(loss_dict["xent"])
        scheduler.step()
        save(model, epoch, optm, loss_dict, os.path.join(args["save_dir"], "epoch-{}.pth.tar".format(epoch)))
    return history


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args = {
        "save_dir": tempfile.mkdtemp(),
        "optimizer": {"name": "adam", "learn_rate_encoder": 1e-2, "learn_rate_decoder": 1e-2},
        "trainer": {"resume_epoch": 0, "epochs": 3},
    }
    history = train_model(args, device)
    args["trainer"] = {"resume_epoch": 3, "epochs": 6}
    history += train_model(args, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
