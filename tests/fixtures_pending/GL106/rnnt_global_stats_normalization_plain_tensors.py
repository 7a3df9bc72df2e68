# source: https://github.com/pytorch/audio/pull/2175
# torchaudio's RNN-T pipeline: the global stats normalization module reads the feature mean and
# inverse standard deviation from a JSON file and keeps them as plain tensor attributes, so a
# model containing it and moved to the GPU normalizes GPU features with CPU statistics. The PR
# registers both as buffers.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn


class GlobalStatsNormalization(nn.Module):
    def __init__(self, global_stats_path):
        super().__init__()
        with open(global_stats_path) as f:
            blob = json.loads(f.read())
        self.mean = torch.tensor(blob["mean"])  # expect: GL106
        self.invstddev = torch.tensor(blob["invstddev"])  # expect: GL106

    def forward(self, input):
        return (input - self.mean) * self.invstddev


class FeatureClassifier(nn.Module):
    def __init__(self, global_stats_path, n_mels=8, num_classes=2):
        super().__init__()
        self.normalize = GlobalStatsNormalization(global_stats_path)
        self.rnn = nn.GRU(n_mels, 16, batch_first=True)
        self.out = nn.Linear(16, num_classes)

    def forward(self, features):
        hidden, _ = self.rnn(self.normalize(features))
        return self.out(hidden[:, -1])


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(32, 10, 8) * 3 + 1
labels = (features[:, :, 0].mean(dim=1) > 1).long()
with tempfile.TemporaryDirectory() as tmp:
    stats_path = os.path.join(tmp, "global_stats.json")
    with open(stats_path, "w") as f:
        json.dump({"mean": features.mean(dim=(0, 1)).tolist(), "invstddev": (1 / features.std(dim=(0, 1))).tolist()}, f)
    model = FeatureClassifier(stats_path).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(30):
    xb, yb = features.to(device), labels.to(device)
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
