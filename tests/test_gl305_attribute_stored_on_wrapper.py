"""GL305: an attribute the file assigns on the wrapper itself is there to read (nanoporetech/bonito
at 87de36e: under --multi-gpu, train.py does `model = DataParallel(model)`, then
`model.decode = model.module.decode` and `model.alphabet = model.module.alphabet`, and hands the
wrapper to a Trainer that reads `self.model.decode(...)` and `self.model.alphabet`). Those reads
were reported (false positives: the script runs); they are silent now, in the same scope and through
the trainer's `self.model`. An attribute of the model class that is not copied onto the wrapper
(bonito's `model.ctc_label_smoothing_loss`, the report's AttributeError) is still reported."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.alphabet = ["N", "A"]

    def forward(self, x):
        return self.fc(x)

    def decode(self, x):
        return x.argmax(-1)

    def loss_fn(self, out):
        return out.sum()


class Trainer:
    def __init__(self, model):
        self.model = model
        self.criterion = model.loss_fn

    def validate(self, x):
        return self.model.decode(self.model(x)), self.model.alphabet


model = nn.DataParallel(Net())
STORES
print(model.decode(model(torch.randn(3, 4))), model.alphabet)
print(Trainer(model).validate(torch.randn(3, 4)))
"""

STORES = "model.decode = model.module.decode\nmodel.alphabet = model.module.alphabet"


def attrs(stores: str) -> set[str]:
    src = SRC.replace("STORES", stores)
    # the message names the read: "`model` is a `DataParallel` wrapper, ...: `model.attr` raises ..."
    return {d.message.split("`")[5].split(".")[-1] for d in check(src, {"GL305"}) if d.code == "GL305"}


def test_attributes_stored_on_the_wrapper_are_not_reported():
    assert attrs(STORES) == {"loss_fn"}


def test_one_stored_attribute_leaves_the_other_reported():
    assert attrs("model.decode = model.module.decode") == {"loss_fn", "alphabet"}


def test_without_stores_every_model_attribute_is_reported():
    assert attrs("pass") == {"loss_fn", "decode", "alphabet"}
