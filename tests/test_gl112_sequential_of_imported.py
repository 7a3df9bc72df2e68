"""GL112 and `nn.Sequential(...)` around instances of imported classes (MishaLaskin/rad, PRECISION40).

The analysis cannot tell whether an instance of a class imported from another file holds weights:
called bare with inputs on the accelerator, it is not reported. A Sequential around it adds no
weight of its own, so it is not reported either; a torch.nn layer with weights in the Sequential,
a zoo model the analysis knows, or a class of the file holding weights keeps the report."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str) -> list[tuple[str, int]]:
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code("GL112")()], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


_RAD = """
import numpy as np
import torch
import torch.nn as nn
from TransformLayer import ColorJitterLayer

{classes}

def random_color_jitter(imgs):
    b, c, h, w = imgs.shape
    imgs = imgs.view(-1, 3, h, w)
    transform_module = nn.Sequential({elements})
    imgs = transform_module(imgs).view(b, c, h, w)
    return imgs


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.from_numpy(np.zeros((2, 9, 8, 8), dtype=np.float32)).to(device)
    random_color_jitter(x)
"""

_JITTER = "ColorJitterLayer(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.5, p=1.0, batch_size=128)"
_FILE_CLASS = """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return x * self.w
"""


def run(elements: str, classes: str = "") -> list[tuple[str, int]]:
    return findings(_RAD.format(elements=elements, classes=classes))


def call_line(classes: str = "") -> int:
    """The line of `transform_module(imgs)`, where GL112 points."""
    src = textwrap.dedent(_RAD.format(elements="", classes=classes))
    return next(i for i, t in enumerate(src.splitlines(), 1) if "transform_module(imgs)" in t)


def test_sequential_of_imported_layer_is_silent():
    assert run(_JITTER) == []


def test_imported_layer_with_parameter_free_torch_layer_is_silent():
    assert run(f"{_JITTER}, nn.ReLU()") == []


def test_torch_layer_with_weights_still_reported():
    assert run(f"{_JITTER}, nn.Conv2d(3, 3, 1)") == [("GL112", call_line())]


def test_file_class_with_weights_still_reported():
    assert run(f"{_JITTER}, Scale()", classes=_FILE_CLASS) == [("GL112", call_line(_FILE_CLASS))]


def test_torch_layers_only_still_reported():
    assert run("nn.Conv2d(3, 3, 1), nn.ReLU()") == [("GL112", call_line())]
