# source: https://github.com/fupinglee/CalculateCaptcha_Recognition/issues/1
# test.py-style predict(): the network is rebuilt and its weights loaded, the image batch is moved
# to the device, the network is not.
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CNN(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(8 * 6 * 6, n_classes)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def train(path):
    net = CNN().to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    losses = []
    for step in range(40):
        labels = torch.randint(0, 5, (32,))
        imgs = torch.randn(32, 1, 12, 12) * 0.3
        imgs[torch.arange(32), 0, labels * 2, 3] += 3.0
        loss = nn.functional.cross_entropy(net(imgs.to(device)), labels.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.save(net.state_dict(), path)
    return losses


def predict(path, imgs):
    net = CNN()
    net.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    net.eval()
    imgs = imgs.to(device)
    with torch.no_grad():
        output = net(imgs)  # expect: GL112
    return output.argmax(dim=1)


torch.manual_seed(0)
ckpt = os.path.join(tempfile.mkdtemp(), "captcha.pt")
losses = train(ckpt)
print("pred", predict(ckpt, torch.randn(4, 1, 12, 12)).tolist())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
