# source: https://github.com/tianrun-chen/SAM-Adapter-PyTorch/issues/89
# SAM-Adapter-PyTorch, train.py: the `Train` class keeps the model, optimizer and loaders on self;
# `Train.eval()` puts the model in eval mode and, for every validation batch, calls
# `torch.sigmoid(self.model.infer(inp))` with autograd on: the image encoder's and mask decoder's
# activations are recorded for a backward that never comes (the issue: "Eval is not wrapped with
# torch.no_grad()"). Training goes through the model's own `set_input()` / `optimize_parameters()`
# (forward, zero_grad, backward_G, optimizer step), as in models/sam.py. The DDP all_gather branches
# of the original are left out (single process); the networks are tiny stand-ins.
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class SAM(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.image_encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.prompt_generator = nn.Conv2d(8, 8, 1)
        self.mask_decoder = nn.Conv2d(8, 1, 1)
        self.loss_fn = nn.BCEWithLogitsLoss()
        self.optimizer = None

    def set_input(self, inp, gt_mask):
        self.input = inp.to(self.device)
        self.gt_mask = gt_mask.to(self.device)

    def forward(self):
        self.features = self.image_encoder(self.input)
        self.pred_mask = self.mask_decoder(self.features + self.prompt_generator(self.features))

    def infer(self, inp):
        features = self.image_encoder(inp)
        return self.mask_decoder(features + self.prompt_generator(features))

    def backward_G(self):
        self.loss_G = self.loss_fn(self.pred_mask, self.gt_mask)
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        self.optimizer.zero_grad()
        self.backward_G()
        self.optimizer.step()


class ToySegmentation(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.inp = torch.randn(n, 3, 16, 16, generator=g)
        self.gt = (self.inp.mean(dim=1, keepdim=True) > 0).float()

    def __len__(self):
        return len(self.inp)

    def __getitem__(self, i):
        return {"inp": self.inp[i], "gt": self.gt[i]}


class Train:
    def __init__(self, model, optimizer, lr_scheduler, train_loader, val_loader, epoch_start, epoch_max, epoch_val, save_path):
        self.model = model
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epoch_start = epoch_start
        self.epoch_max = epoch_max
        self.epoch_val = epoch_val
        self.save_path = save_path
        self.history = []

    def eval(self, epoch=None):
        self.model.eval()
        ious = []
        for i, batch in enumerate(self.val_loader):
            for k, v in batch.items():
                batch[k] = v.to(self.model.device)
            inp = batch["inp"]
            pred = torch.sigmoid(self.model.infer(inp))  # expect: GL403
            batch_pred = (pred > 0.5).int()
            batch_gt = (batch["gt"] > 0).int()
            inter = (batch_pred & batch_gt).sum().item()
            union = (batch_pred | batch_gt).sum().item()
            ious.append(inter / max(union, 1))
        return sum(ious) / len(ious)

    def train(self):
        self.model.train()
        loss_list = []
        for batch in self.train_loader:
            for k, v in batch.items():
                batch[k] = v.to(self.model.device)
            self.model.set_input(batch["inp"], batch["gt"])
            self.model.optimize_parameters()
            loss_list.append(self.model.loss_G.item())
        return sum(loss_list) / len(loss_list)

    def start(self):
        best_mean_IoU = -1
        for epoch in range(self.epoch_start, self.epoch_max + 1):
            train_loss_G = self.train()
            self.history.append(train_loss_G)
            self.lr_scheduler.step()
            self.save("last")
            if (self.epoch_val is not None) and (epoch % self.epoch_val == 0):
                current_mean_IoU = self.eval(epoch)
                if current_mean_IoU > best_mean_IoU:
                    best_mean_IoU = current_mean_IoU
                    self.save("best")

    def save(self, name):
        torch.save(self.model.state_dict(), os.path.join(self.save_path, f"model_epoch_{name}.pth"))


if __name__ == "__main__":
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SAM(device).to(device)
    for name, para in model.named_parameters():
        if "image_encoder" in name and "prompt_generator" not in name:
            para.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.02)
    model.optimizer = optimizer
    lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 20, eta_min=1e-4)
    train_loader = DataLoader(ToySegmentation(64, 0), batch_size=8, shuffle=True)
    val_loader = DataLoader(ToySegmentation(16, 1), batch_size=8)
    with tempfile.TemporaryDirectory() as save_path:
        train = Train(model, optimizer, lr_scheduler, train_loader, val_loader, 1, 8, 2, save_path)
        train.start()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": train.history[0], "last_loss": train.history[-1], "device": device}))
