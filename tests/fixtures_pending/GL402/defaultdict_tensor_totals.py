# source: https://github.com/MultimediaTechLab/YOLO/pull/83
# The trainer sums its loss components into a defaultdict of tensors
# (total_loss[loss_name] += loss_val * batch_size); the components carry their graphs, so every
# batch's graph stays alive for the whole epoch. Fixed with a defaultdict(float) and .item().
import json
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class DetLoss:
    def __call__(self, pred, box_t, cls_t):
        box_loss = F.smooth_l1_loss(pred[:, :4], box_t)
        cls_loss = F.cross_entropy(pred[:, 4:], cls_t)
        total = box_loss + cls_loss
        return total, {"BoxLoss": box_loss, "ClsLoss": cls_loss}


class ModelTrainer:
    def __init__(self, model, device):
        self.device = device
        self.model = model.to(device)
        self.loss_fn = DetLoss()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)

    def train_one_batch(self, images, box_t, cls_t):
        images, box_t, cls_t = images.to(self.device), box_t.to(self.device), cls_t.to(self.device)
        self.optimizer.zero_grad()
        loss, loss_item = self.loss_fn(self.model(images), box_t, cls_t)
        loss.backward()
        self.optimizer.step()
        return loss_item

    def train_one_epoch(self, dataloader):
        self.model.train()
        total_loss = defaultdict(lambda: torch.tensor(0.0, device=self.device))
        total_samples = 0
        for images, box_t, cls_t in dataloader:
            batch_size = images.shape[0]
            loss_item = self.train_one_batch(images, box_t, cls_t)
            for loss_name, loss_val in loss_item.items():
                total_loss[loss_name] += loss_val * batch_size  # expect: GL402
            total_samples += batch_size
        return {k: float(v) / total_samples for k, v in total_loss.items()}


torch.manual_seed(0)
images = torch.randn(256, 10)
box_t = images[:, :4] * 0.5
cls_t = (images[:, 4] > 0).long()
loader = DataLoader(TensorDataset(images, box_t, cls_t), batch_size=32, shuffle=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
trainer = ModelTrainer(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 6)), device)
epochs = [trainer.train_one_epoch(loader) for _ in range(4)]
first, last = sum(epochs[0].values()), sum(epochs[-1].values())
print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
