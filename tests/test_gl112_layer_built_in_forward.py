"""GL112: a torch layer built inside a module's forward and called there, after the model was
moved (the layer's weights are made on the CPU at every call; "Input type (torch.cuda.FloatTensor)
and weight type (torch.FloatTensor) should be the same")."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

_SRC = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        proj = nn.Linear(x.size(-1), 2{kw}){move}
        return proj(self.norm(x))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
head = Head(){place}
x = torch.randn(3, 4){place}
print(head(x))
"""


def findings(kw="", move="", place=".to(device)") -> list[tuple[str, int]]:
    reg = Registry.load()
    src = _SRC.format(kw=kw, move=move, place=place)
    res = run_text("t.py", textwrap.dedent(src), [reg.by_code(c)() for c in ("GL112", "GL116")], Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


def test_layer_built_in_forward_is_reported_at_its_call():
    assert findings() == [("GL112", 13)]


def test_layer_built_on_the_input_device_is_silent():
    assert findings(kw=", device=x.device") == []
    assert findings(move=".to(x.device)") == []


def test_nothing_moved_is_silent():
    assert findings(place="") == []


_BUILT_IN_HELPER = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self._build(d)

    def _build(self, d):
        self.proj = nn.Linear(d, 2)
        self.proj(torch.zeros(1, d))  # a dry run while building (on the CPU, before any move)

    def forward(self, x):
        return self.proj(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
head = Head(4).to(device)
print(head(torch.randn(3, 4).to(device)))
"""


def test_layer_built_by_a_helper_of_init_is_silent():
    reg = Registry.load()
    res = run_text("t.py", textwrap.dedent(_BUILT_IN_HELPER), [reg.by_code("GL112")()], Options())
    assert res.diagnostics == []
