"""GL112: inputs moved to the device of an object that was built with the model
(dvgodoy/PyTorchStepByStep Chapter10.ipynb: `sbs_seq_transf = StepByStep(model_transf, loss,
optimizer)` from `stepbystep.v4`, whose constructor moves the model to its `self.device`, then
`device = sbs_seq_transf.device; model_transf(x.to(device))`; lyhue1991/eat_pytorch_in_20_days
3-3: `keras_model = KerasModel(net, ...)` from torchkeras, then
`device = keras_model.accelerator.device`). The holder owns both and placed the model. A device
read from an object built without the model, or from a class of the file, keeps the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
from stepbystep.v4 import StepByStep


class Config:
    def __init__(self):
        self.device = "cuda" if torch.cuda.is_available() else "cpu"


torch.manual_seed(11)
model_transf = nn.Sequential(nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 2))
loss = nn.MSELoss()
optimizer = torch.optim.Adam(model_transf.parameters(), lr=0.01)
{holder}
x, y = torch.randn(16, 2), torch.randn(16, 2)
model_transf.train()
print(loss(model_transf(x.to(device)), y.to(device)))
"""


def _lines(holder: str):
    src = textwrap.dedent(SRC).format(holder=holder)
    return [d.line for d in check(src, ["GL112"]) if d.code == "GL112"]


def test_device_of_imported_trainer_holding_the_model_is_not_reported():
    holder = "sbs = StepByStep(model_transf, loss, optimizer)\nsbs.train(5)\ndevice = sbs.device"
    assert _lines(holder) == []


def test_accelerator_device_of_imported_holder_is_not_reported():
    holder = ("from torchkeras import KerasModel\nkeras_model = KerasModel(model_transf, loss_fn=loss, optimizer=optimizer)\n"
              "device = keras_model.accelerator.device")
    assert _lines(holder) == []


def test_device_of_object_built_without_the_model_is_reported():
    holder = "from settings import Settings\ncfg = Settings(lr=0.01)\ndevice = cfg.device"
    assert _lines(holder) == [21]


def test_device_of_class_of_the_file_is_reported():
    assert _lines("cfg = Config()\ndevice = cfg.device") == [20]
