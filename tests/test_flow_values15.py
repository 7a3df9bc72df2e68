"""Flow engine shapes from the fifteenth real-bug batch (fixtures15): a device helper written
with `if`/`else` returns, and parameter-free loss modules made of parameter-free parts of the
file. (The trainer whose `fit()` sets `self.model` that a helper reads is the darts#449 fixture.)"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_device_helper_with_if_else_returns_is_the_accelerator():
    # unit8co/darts#449: `_get_best_torch_device()` returns cuda:0 on the availability branch
    src = """
    import torch
    import torch.nn as nn


    def get_device():
        is_cuda = torch.cuda.is_available()
        if is_cuda:
            return torch.device("cuda:0")
        else:
            return torch.device("cpu")


    device = get_device()
    model = nn.Linear(3, 2).to(device)
    x = torch.randn(4, 3)
    y = model(x)
    """
    assert findings(src) == [("GL116", 17)]


def test_parameter_free_criterion_of_parameter_free_parts_is_not_reported():
    # the DETA stage-1 criterion: an assigner part of the file with no parameters or buffers
    src = """
    import torch
    import torch.nn as nn


    class Assigner(nn.Module):
        def __init__(self, k=4):
            super().__init__()
            self.k = k

        def forward(self, scores):
            return scores.topk(self.k, dim=1).indices


    class Criterion(nn.Module):
        def __init__(self):
            super().__init__()
            self.assigner = Assigner()

        def forward(self, scores, target):
            idx = self.assigner(scores)
            return (scores.gather(1, idx) - target).abs().mean()


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(8, 8).to(device)
    criterion = Criterion()
    x = torch.randn(2, 8).to(device)
    t = torch.randn(2, 4).to(device)
    loss = criterion(model(x), t)
    """
    assert findings(src) == []


def test_criterion_with_a_weighted_part_is_still_reported():
    src = """
    import torch
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 4)

        def forward(self, x):
            return self.proj(x)


    class Criterion(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = Head()

        def forward(self, scores, target):
            return (self.head(scores) - target).abs().mean()


    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(8, 8).to(device)
    criterion = Criterion()
    x = torch.randn(2, 8).to(device)
    t = torch.randn(2, 4).to(device)
    loss = criterion(model(x), t)
    """
    assert findings(src) == [("GL112", 29)]
