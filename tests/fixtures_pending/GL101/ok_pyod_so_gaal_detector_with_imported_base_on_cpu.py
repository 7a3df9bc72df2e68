# Source shape: https://github.com/yzhao062/pyod/blob/master/pyod/models/so_gaal.py (SO_GAAL.fit)
# Pending hard negative (PRECISION43, P43-2): a scikit-learn-style detector, whose base class is
# imported from the package (`from .base import BaseDetector`), builds its discriminator in `fit`
# and trains it on the DataLoader's batches. Nothing in the file moves anything to a device: model
# and batches stay on the host. GL101 reports `self.discriminator(data_batch)` today: with a base
# class it cannot read, the flow engine takes the detector for a module and its attribute module
# for "wherever the module is". The base class is written to a temporary package, so that this
# file does not define it, and the detector is run from there too (a script that runs it here is
# silent: the engine then sees the instance is never moved).
import json
import os
import runpy
import sys
import tempfile
import textwrap

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "detector_base.py"), "w") as f:
    f.write(textwrap.dedent('''
        class BaseDetector:
            def __init__(self, contamination=0.1):
                self.contamination = contamination
    '''))
sys.path.insert(0, pkg)
from detector_base import BaseDetector

torch.manual_seed(0)


class Discriminator(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layer1 = nn.Linear(n, 8)
        self.layer2 = nn.Linear(8, 1)

    def forward(self, x):
        return torch.sigmoid(self.layer2(torch.relu(self.layer1(x))))


class SO_GAAL(BaseDetector):
    def __init__(self, epochs=10, lr_d=0.05, contamination=0.1):
        super().__init__(contamination=contamination)
        self.epochs = epochs
        self.lr_d = lr_d

    def fit(self, X):
        self.discriminator = Discriminator(X.shape[1])
        optimizer_d = torch.optim.SGD(self.discriminator.parameters(), lr=self.lr_d, momentum=0.9)
        criterion = nn.BCELoss()
        dataloader = DataLoader(TensorDataset(torch.tensor(X, dtype=torch.float32)), batch_size=32, shuffle=True)
        self.history = []
        for epoch in range(self.epochs):
            for data_batch in dataloader:
                data_batch = data_batch[0]
                noise = torch.rand(data_batch.size(0), data_batch.size(1)) * 6 - 3
                outputs_real = self.discriminator(data_batch)
                outputs_fake = self.discriminator(noise)
                d_loss = criterion(outputs_real, torch.ones_like(outputs_real)) + criterion(
                    outputs_fake, torch.zeros_like(outputs_fake))
                optimizer_d.zero_grad()
                d_loss.backward()
                optimizer_d.step()
            self.history.append(d_loss.item())
        return self


# the detector's users live in other files (pyod's examples, scikit-learn pipelines): the run is
# written beside the base class and handed the class, so that this file only defines it
with open(os.path.join(pkg, "run_detector.py"), "w") as f:
    f.write(textwrap.dedent('''
        import torch

        X = (torch.randn(256, 4) * 0.5).numpy()
        det = detector_class().fit(X)
        result = {"first_loss": det.history[0], "last_loss": det.history[-1], "device": "cpu"}
    '''))
out = runpy.run_path(os.path.join(pkg, "run_detector.py"), init_globals={"detector_class": SO_GAAL})
print("GPULINT-TRAIN " + json.dumps(out["result"]))
