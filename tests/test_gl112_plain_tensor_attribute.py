"""GL112 and a loss module whose only state is a plain tensor attribute (GL106's shape)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in ("GL106", "GL112")]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


_FOCAL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class FocalLoss(nn.Module):
    def __init__(self, alpha, gamma=2.0):
        super().__init__()
        {state}
        self.gamma = gamma

    def forward(self, logits, target):
        logp = F.log_softmax(logits, -1).gather(1, target[:, None]).squeeze(1)
        return (-self.alpha[target] * (1 - logp.exp()) ** self.gamma * logp).mean()


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(8, 3).to(device)
    crit = FocalLoss([0.2, 0.3, 0.5])
    for _ in range(3):
        x = torch.randn(16, 8).to(device)
        y = torch.randint(0, 3, (16,)).to(device)
        crit(model(x), y).backward()


main()
"""


def test_plain_tensor_attribute_is_gl106_not_gl112():
    # `crit.to(device)` would not move `self.alpha` (not registered): GL112's fix cannot help, the
    # crash is the unregistered table, reported by GL106 at the attribute
    assert findings(_FOCAL.format(state="self.alpha = torch.tensor(alpha)")) == [("GL106", 10)]


def test_registered_buffer_still_gl112():
    # once registered, moving the loss module is the fix
    assert findings(_FOCAL.format(state='self.register_buffer("alpha", torch.tensor(alpha))')) == [("GL112", 25)]
