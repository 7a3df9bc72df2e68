"""GL401's fix writes `opt.zero_grad(set_to_none=True)`. The fixes13 corpus audit found it inserted
into a loop over apex's `FP16_Optimizer` wrappers (corpus9e, TorchSemiSeg's vendored apex
tests/run_mixed_adam/test_fp16_optimizer.py; https://github.com/NVIDIA/apex), whose
`zero_grad(self, set_grads_to_None=True)` takes no `set_to_none`: the "safe" fix raised TypeError
on the first iteration. An optimizer built by a class from outside torch gets plain `zero_grad()`
(the same behaviour as `set_to_none=True` on torch >= 2.0); a torch optimizer keeps the keyword."""

from __future__ import annotations

import ast

from fixture_support import fix

APEX_WRAPPED = '''import torch
import apex


def run(model, x, iters):
    base = torch.optim.Adam(model.parameters())
    opt = apex.fp16_utils.FP16_Optimizer(base, static_loss_scale=128.0)
    for i in range(iters):
        loss = model(x).sum()
        opt.backward(loss)
        opt.step()
'''

TORCH_OPT = '''import torch


def run(model, x, iters):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(iters):
        loss = model(x).sum()
        loss.backward()
        opt.step()
'''

def _inserted(before: str, after: str) -> list[str]:
    old = before.splitlines()
    return [line.strip() for line in after.splitlines() if line not in old]


def test_apex_wrapper_gets_plain_zero_grad():
    out = fix(APEX_WRAPPED, {"GL401"}, unsafe=False).text
    ast.parse(out)
    assert _inserted(APEX_WRAPPED, out) == ["opt.zero_grad()"]


def test_torch_optimizer_keeps_set_to_none():
    out = fix(TORCH_OPT, {"GL401"}, unsafe=False).text
    assert _inserted(TORCH_OPT, out) == ["opt.zero_grad(set_to_none=True)"]
