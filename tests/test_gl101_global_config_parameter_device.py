"""GL101's fix in a function that receives the script's module-level config as a parameter
(HoyTta0/KnowledgeDistillation#9: `cfg = Config()` under `if __name__ == "__main__":`, the model
moved with `.to(cfg.device)`, `teacher_train(model, config, ...)` calling
`teacher_evaluate(model, config, ...)`): the batch is moved with the parameter (`config.device`),
which exists wherever the function is imported from, not with the global `cfg`. A function whose
calls hand it something else keeps the global."""

from __future__ import annotations

import textwrap

from fixture_support import fix

SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Config:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def evaluate(model, config, loader):
    for x, y in loader:
        x = x.to(config.device)
        print(F.cross_entropy(model(x), y).item())


def train(model, config, loader):
    for x, y in loader:
        x = x.to(config.device)
        F.cross_entropy(model(x), y).backward()
    evaluate(model, config, loader)


if __name__ == "__main__":
    cfg = Config()
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
    model = nn.Linear(4, 2).to(cfg.device)
    train(model, cfg, loader)
"""


def _fixed(text):
    return fix(textwrap.dedent(text), {"GL101"}, unsafe=True).text


def test_moved_with_the_parameter_the_global_is_handed_to():
    out = _fixed(SCRIPT)
    assert out.count("y = y.to(config.device)") == 2
    assert "cfg.device)\n        x" not in out and "y.to(cfg.device)" not in out


def test_a_function_handed_something_else_keeps_the_global():
    other = SCRIPT.replace("    train(model, cfg, loader)", "    train(model, Config(), loader)")
    out = _fixed(other)
    assert "y = y.to(cfg.device)" in out
