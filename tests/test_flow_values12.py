"""Value rules of the flow engine added in the twelfth session (gpulint/flow.py)."""

from __future__ import annotations

from fixture_support import check

LOOP = """
import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
crit = nn.CrossEntropyLoss()
X = np.random.randn(16, 4).astype(np.float32)
Y = np.random.randint(0, 3, 16)
for i in range(0, 16, 4):
    xb = torch.from_numpy(X[i:i + 4]).to(device)
    yb = {labels}
    loss = crit(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_tensor_made_from_a_slice_has_a_dimension_and_mismatches():
    # legacy-type and torch.tensor constructors of `labels[i:j]`: not a 0-dim scalar
    for labels in ("torch.LongTensor(Y[i:i + 4])", "torch.tensor(Y[i:i + 4])"):
        src = LOOP.replace("{labels}", labels)
        found = check(src, ["GL116"])
        assert [d.code for d in found] == ["GL116"], labels
        assert "`yb`" in found[0].message


def test_a_tensor_made_from_one_element_may_be_a_scalar_and_is_silent():
    src = LOOP.replace("{labels}", "torch.tensor(Y[i])")
    assert check(src, ["GL116"]) == []


LIGHTNING = """
import torch
from torch import nn
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 8)
        self.ce = nn.CrossEntropyLoss()

    def forward(self, x1, x2):
        return self.enc(x1) @ self.enc(x2).t()

    def training_step(self, batch, batch_idx):
        x1, x2 = batch["x1"], batch["x2"]
        predict = self(x1, x2)
        target = {target}
        return self.ce(predict, target)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""


def test_a_host_factory_in_a_lightning_step_meets_the_batch_device():
    # pytorch-lightning#2400: Lightning moved the batch and the module; `torch.arange(n)` did not
    src = LIGHTNING.replace("{target}", "torch.arange(x1.size()[0])")
    found = check(src, ["GL105", "GL116"])
    assert [d.code for d in found] == ["GL105"]


def test_factories_placed_in_a_lightning_step_are_silent():
    for target in ("torch.arange(x1.size()[0], device=self.device)", "torch.arange(x1.size()[0]).to(x1.device)",
                   "torch.arange(x1.size()[0]).type_as(predict).long()", "batch['y']"):
        src = LIGHTNING.replace("{target}", target)
        assert check(src, ["GL105", "GL116", "GL101"]) == [], target


def test_a_plain_module_method_named_training_step_is_not_lightnings():
    src = LIGHTNING.replace("pl.LightningModule", "nn.Module").replace(
        "{target}", "torch.arange(x1.size()[0])")
    assert check(src, ["GL105", "GL116"]) == []


RAW_PARAMETER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Attn(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.K = nn.Parameter(torch.rand(n, n))

    def forward(self, x):
        return torch.matmul(self.K, x)


{build}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, 4, 2)), batch_size=4)
for (xb,) in loader:
    loss = model(xb).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_parameter_of_a_module_never_moved_does_not_meet_cpu_batches():
    # fixtures13b (NakedAttention look-alike): a CPU-only script, `torch.matmul(self.K, x)` in forward
    assert check(RAW_PARAMETER.replace("{build}", "model = Attn()"), ["GL101", "GL116"]) == []


def test_a_parameter_of_a_moved_module_meets_unmoved_batches():
    build = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nmodel = Attn().to(device)'
    assert [d.code for d in check(RAW_PARAMETER.replace("{build}", build), ["GL101", "GL116"])] == ["GL101"]
