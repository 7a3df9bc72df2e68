"""Flow engine shapes from the fourteenth session (pending real bugs of the seventeenth batch)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL105", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


_DER = """
import torch
import torch.nn as nn


def _der_update(preds, target, threshold=0.5):
    if isinstance(threshold, {types}):
        threshold = torch.tensor([threshold], dtype=preds.dtype)
    hypothesis = (preds > threshold).float()
    return (hypothesis - target).abs().sum()


class DER:
    def __init__(self, threshold={default}):
        self.threshold = threshold
        self.total = 0.0

    def update(self, preds, target):
        self.total += _der_update(preds, target, threshold=self.threshold).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2).to(device)
    metric = DER()
    x = torch.randn(8, 4).to(device)
    y = torch.rand(8, 2).to(device)
    metric.update(torch.sigmoid(model(x)), y)


main()
"""


def test_isinstance_float_of_a_float_literal_runs_its_branch():
    # pyannote/pyannote-audio#961: a float threshold (the metric's default, handed on through
    # `self.threshold`) becomes `torch.tensor([threshold])` on the host under
    # `isinstance(threshold, float)`, then meets the accelerator predictions
    assert findings(_DER.format(types="float", default="0.5")) == [("GL116", 9)]
    assert findings(_DER.format(types="(int, float)", default="0.5")) == [("GL116", 9)]


def test_isinstance_float_of_an_int_literal_skips_its_branch():
    # an int threshold never passes `isinstance(x, float)`: it stays a number
    assert findings(_DER.format(types="float", default="1")) == []
    # nor does a float pass `isinstance(x, int)`
    assert findings(_DER.format(types="int", default="0.5")) == []


def test_isinstance_of_a_class_not_decided():
    # a class the engine does not decide (np.ndarray, a class of the file): nothing is concluded,
    # the number on one path and the host tensor on the other stay unknown
    assert findings(_DER.format(types="(float, np.ndarray)", default="0.5").replace(
        "import torch\n", "import numpy as np\nimport torch\n", 1)) == []


def test_is_tensor_of_a_number_runs_the_conversion():
    src = """
    import torch
    import torch.nn as nn


    def hinge(scores, margin=1.0):
        if not torch.is_tensor(margin):
            margin = torch.full((scores.shape[-1],), margin)
        return torch.clamp(margin - scores, min=0).mean()


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 3).to(device)
        x = torch.randn(8, 4).to(device)
        loss = hinge(model(x))
        loss.backward()


    main()
    """
    assert findings(src) == [("GL116", 9)]


def test_is_tensor_of_a_tensor_argument_decides_nothing():
    # a tensor given by one call and a number by another: which branch runs depends on the call
    src = """
    import torch
    import torch.nn as nn


    def hinge(scores, margin=1.0):
        if not torch.is_tensor(margin):
            margin = torch.full((scores.shape[-1],), margin)
        return torch.clamp(margin - scores, min=0).mean()


    def main():
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 3).to(device)
        x = torch.randn(8, 4).to(device)
        loss = hinge(model(x), margin=torch.ones(3, device=device))
        loss.backward()


    main()
    """
    assert findings(src) == []
