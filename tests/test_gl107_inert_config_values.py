"""GL107 is silent on a plain dict of modules of this file that keep only numbers, their
arguments and values read from an argument with literal keys (P48-4, NVIDIA/radtts loss.py:
`AttributePredictionLoss` keeps `self.model_name = model_config['name']` and
`self.n_group_size = model_config['hparams']['n_group_size']`): nothing to register. A module
keeping a layer with parameters, or a value computed otherwise, stays reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch.nn as nn


class AttrLoss(nn.Module):
    def __init__(self, name, model_config, weight):
        super().__init__()
        self.name = name
        self.weight = weight
        KEEP

    def forward(self, x):
        return x.mean() * self.weight


class Loss(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.loss_fns = {}
        self.loss_fns["dur"] = AttrLoss("dur", cfg, 1.0)
        self.loss_fns["f0"] = AttrLoss("f0", cfg, 0.5)

    def forward(self, x):
        return sum(f(x) for f in self.loss_fns.values())
'''


def _codes(keep):
    return [f.code for f in check(TEXT.replace("KEEP", keep), {"GL107"})]


def test_value_read_from_the_config_argument():
    assert _codes('self.model_name = model_config["name"]') == []


def test_nested_literal_keys():
    assert _codes('self.groups = model_config["hparams"]["n_group_size"]') == []


def test_integer_key():
    assert _codes("self.first = model_config[0]") == []


def test_a_layer_with_parameters_stays_reported():
    assert _codes("self.proj = nn.Linear(4, 4)") == ["GL107"]


def test_a_computed_key_stays_reported():
    assert _codes("self.model_name = model_config[name]") == ["GL107"]


def test_a_call_on_the_config_stays_reported():
    assert _codes('self.model_name = model_config.get("name")') == ["GL107"]
