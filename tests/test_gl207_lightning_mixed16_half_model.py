"""GL207 reports a Lightning Trainer with native 16-bit mixed precision (`precision=16`, `"16"`,
`"16-mixed"`) fitting a module converted to float16 before the fit (G58-5,
Lightning-AI/pytorch-lightning#5140). A conversion after the fit, `"16-true"`, bf16 or 32-bit
precision, and a module never converted stay silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import pytorch_lightning as pl
import torch
import torch.nn as nn


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


model = MODEL
BEFORE
trainer = pl.Trainer(max_epochs=1, accelerator="gpu", devices=1, precision=PREC)
trainer.fit(model, train_dataloaders=None)
AFTER
'''


def _lines(model="Model()", before="model.half()", prec="16", after=""):
    text = TEXT.replace("MODEL", model).replace("BEFORE", before).replace("PREC", prec).replace("AFTER", after)
    return [f.line for f in check(text, {"GL207"})]


def test_half_before_fit_with_precision_16_is_reported():
    assert _lines() == [21]


def test_half_chained_on_construction_with_16_mixed_is_reported():
    assert _lines(model="Model().half()", before="", prec='"16-mixed"') == [21]


def test_half_after_fit_is_silent():
    assert _lines(before="", after="model.half()") == []


def test_16_true_is_silent():
    assert _lines(prec='"16-true"') == []


def test_bf16_mixed_is_silent():
    assert _lines(prec='"bf16-mixed"') == []


def test_32_bit_is_silent():
    assert _lines(prec="32") == []


def test_model_not_converted_is_silent():
    assert _lines(before="") == []
