"""GL116's safe `device=` fix on a factory whose size is a parenthesized tuple
(GarrettJenkinson/condor_pytorch#2): the keyword goes after the tuple, not inside it."""

from __future__ import annotations

import textwrap

from fixture_support import fix

SRC = """
import torch

def loss_fn(logits, labels):
    pi = torch.cat([torch.ones((labels.shape[0], 1)), labels[:, :-1]], dim=1)
    return (logits * pi).sum()

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = torch.nn.Parameter(torch.randn(3, 4, device=device))
print(loss_fn(w * 2, torch.ones(3, 4, device=device)))
"""


def test_device_after_the_tuple():
    out = fix(textwrap.dedent(SRC), {"GL116"}, unsafe=False).text
    assert "torch.ones((labels.shape[0], 1), device=labels.device)" in out
