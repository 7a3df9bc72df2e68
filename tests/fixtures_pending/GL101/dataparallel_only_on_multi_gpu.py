# source: https://github.com/facebookarchive/adversarial_image_defenses/pull/11
# The trainer counts on DataParallel to copy the CPU batches to the GPU, but only wraps the model
# when there is more than one GPU; on a single GPU the plain model (moved to the device) gets the
# CPU batch.
# fails-on-cuda: should be the same
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ConvTrainer:
    def __init__(self, model, loader):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        if torch.cuda.device_count() > 1:
            self.model = nn.DataParallel(self.model)
        self.criterion = nn.CrossEntropyLoss().to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9)
        self.loader = loader

    def train(self, epochs):
        history = []
        for _ in range(epochs):
            for imgs, targets in self.loader:
                targets = targets.to(self.device)
                output = self.model(imgs)  # expect: GL101
                loss = self.criterion(output, targets)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                history.append(loss.item())
        return history


torch.manual_seed(0)
imgs = torch.randn(256, 1, 8, 8)
labels = (imgs[:, 0, :4].mean(dim=(1, 2)) > imgs[:, 0, 4:].mean(dim=(1, 2))).long()
net = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 64, 2))
trainer = ConvTrainer(net, DataLoader(TensorDataset(imgs, labels), batch_size=32, shuffle=True))
losses = trainer.train(epochs=4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))
