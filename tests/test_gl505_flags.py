"""GL505: `if cfg.empty_cache:` is no condition when the file sets that flag only to True (a
class-level or dataclass default, or an `__init__` parameter defaulting to True that no
construction overrides); any other value, or a construction that passes another, keeps it a
condition."""

from __future__ import annotations

import pytest
from fixture_support import check

DATACLASS = '''from dataclasses import dataclass
import torch
import torch.nn as nn


@dataclass
class Cfg:
    steps: int = 5
    empty_cache: bool = {default}


def main(cfg):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(cfg.steps):
        if cfg.empty_cache:
            torch.cuda.empty_cache()
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()


{runs}
'''

INIT = '''import torch
import torch.nn as nn


class Cfg:
    def __init__(self, steps=5, empty_cache={default}):
        self.steps = steps
        self.empty_cache = empty_cache


def main(cfg):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(cfg.steps):
        if cfg.empty_cache:
            torch.cuda.empty_cache()
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()


{runs}
'''


def gl505(text):
    return [d.line for d in check(text, {"GL505"}) if d.code == "GL505"]


@pytest.mark.parametrize("template", [DATACLASS, INIT])
@pytest.mark.parametrize("runs", ["main(Cfg())", "main(Cfg(steps=3))\nmain(Cfg(empty_cache=True))"])
def test_flag_on_in_every_run_reports(template, runs):
    assert gl505(template.format(default="True", runs=runs)) == [17 if template is DATACLASS else 16]


@pytest.mark.parametrize("template", [DATACLASS, INIT])
@pytest.mark.parametrize(
    "default, runs",
    [
        ("False", "main(Cfg())"),
        ("True", "main(Cfg(empty_cache=False))"),
        ("True", "main(Cfg(3, False))"),
        ("True", "cfg = Cfg()\ncfg.empty_cache = flag\nmain(cfg)"),
        ("True", "make = Cfg\nmain(make())"),
        ("True", "main(Cfg(**options))"),
    ],
)
def test_flag_off_or_unknown_stays_silent(template, default, runs):
    assert gl505(template.format(default=default, runs=runs)) == []
