# source: https://github.com/fartashf/vsepp/issues/4
# VSE++ keeps two encoders in a plain model class with train_start()/val_start() methods. train()
# calls model.train_start() once at the top of each epoch, and every opt.val_step iterations the
# loop calls validate(), which calls model.val_start() (both encoders to eval mode); nothing puts
# them back in train mode until the next epoch, so dropout is off for the rest of the epoch (the
# maintainer confirmed; fixing it changed results noticeably).
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class EncoderImage(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.2), nn.Linear(32, 8))

    def forward(self, x):
        return nn.functional.normalize(self.fc(x), dim=1)


class EncoderText(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(10, 32), nn.Dropout(0.2), nn.Linear(32, 8))

    def forward(self, x):
        return nn.functional.normalize(self.fc(x), dim=1)


class VSE:
    def __init__(self, device):
        self.img_enc = EncoderImage().to(device)
        self.txt_enc = EncoderText().to(device)
        self.optimizer = torch.optim.Adam(list(self.img_enc.parameters()) + list(self.txt_enc.parameters()), lr=1e-2)
        self.Eiters = 0

    def train_start(self):
        self.img_enc.train()
        self.txt_enc.train()

    def val_start(self):
        self.img_enc.eval()  # expect: GL404
        self.txt_enc.eval()  # expect: GL404

    def forward_emb(self, images, captions):
        return self.img_enc(images), self.txt_enc(captions)

    def train_emb(self, images, captions):
        self.Eiters += 1
        img_emb, cap_emb = self.forward_emb(images, captions)
        scores = img_emb @ cap_emb.t()
        loss = nn.functional.cross_entropy(scores / 0.1, torch.arange(scores.size(0), device=scores.device))
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def validate(val_loader, model, device):
    model.val_start()
    total = 0.0
    with torch.no_grad():
        for images, captions in val_loader:
            img_emb, cap_emb = model.forward_emb(images.to(device), captions.to(device))
            total += (img_emb * cap_emb).sum(1).mean().item()
    return total / len(val_loader)


def train(train_loader, val_loader, model, device, val_step=4):
    model.train_start()
    losses = []
    for i, (images, captions) in enumerate(train_loader):
        losses.append(model.train_emb(images.to(device), captions.to(device)))
        if model.Eiters % val_step == 0:
            validate(val_loader, model, device)
    return losses


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
latent = torch.randn(320, 6)
images = torch.cat([latent, torch.randn(320, 10) * 0.1], 1)
captions = torch.cat([latent, torch.randn(320, 4) * 0.1], 1)
train_loader = DataLoader(TensorDataset(images[:256], captions[:256]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(images[256:], captions[256:]), batch_size=32)
model = VSE(device)
history = []
for epoch in range(5):
    history += train(train_loader, val_loader, model, device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))
