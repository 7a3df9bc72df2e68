# source: https://github.com/TorchDSP/torchsig/issues/65
# The evaluation model is built and its state_dict loaded in a helper; the data is moved to the
# device, the reloaded model never is.
# fails-on-cuda: should be the same
import json
import os
import tempfile

import torch
import torch.nn as nn


class SignalNet(nn.Module):
    def __init__(self, n_in=16, n_classes=4):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(4))
        self.head = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


def load_example_model(path):
    example_model = SignalNet()
    example_model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    example_model.eval()
    return example_model


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
X = torch.randn(256, 1, 16)
Y = (X.mean(dim=(1, 2)) > 0).long() + 2 * (X[:, 0, 0] > 0).long()
model = SignalNet().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(40):
    idx = torch.randint(0, 256, (32,))
    loss = nn.functional.cross_entropy(model(X[idx].to(device)), Y[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

ckpt = os.path.join(tempfile.mkdtemp(), "signal.pt")
torch.save(model.state_dict(), ckpt)
example_model = load_example_model(ckpt)
with torch.no_grad():
    data = X[:64].to(device)
    preds = example_model(data).argmax(dim=1)  # expect: GL112
print("accuracy", (preds.cpu() == Y[:64]).float().mean().item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
