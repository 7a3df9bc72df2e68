"""GL403 at a per-batch helper shared by training and evaluation (fixtures39 E39-3).

ccpem/affinity-vae#113 (tests/fixtures/GL403/affinity_vae_val_pass_batch_without_no_grad.py):
`pass_batch(model, x, optimizer=None)` runs the model and steps only `if optimizer is not None:`.
The training loop passes the optimizer; the loop after `model.eval()` leaves it at `None`, so at
that call the helper only runs the forward, with gradients on. The evaluation loop looked like a
training loop (its step comes through the helper), so nothing was reported.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


def pass_batch(model, x, optimizer=None):
    loss = model(x).pow(2).mean()
    if optimizer is not None:
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return {ret}


model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model.train()
    for _ in range(4):
        pass_batch(model, torch.randn(8, 4), optimizer=opt)
    {mode}
    for _ in range(2):
        {call}
"""


def _lines(mode: str, call: str, ret: str = "loss") -> list[int]:
    rule = Registry.load().by_code("GL403")()
    src = textwrap.dedent(SRC.format(mode=mode, call=call, ret=ret))
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_the_evaluation_call_that_leaves_the_optimizer_out_is_reported():
    assert _lines("model.eval()", "pass_batch(model, torch.randn(8, 4))") == [23]


def test_a_call_that_passes_none_explicitly_is_reported_too():
    assert _lines("model.eval()", "pass_batch(model, torch.randn(8, 4), optimizer=None)") == [23]


def test_a_second_training_loop_is_not():
    assert _lines("model.eval()", "pass_batch(model, torch.randn(8, 4), optimizer=opt)") == []


def test_a_loop_not_in_eval_mode_is_not():
    assert _lines("pass", "pass_batch(model, torch.randn(8, 4))") == []


def test_a_call_under_no_grad_is_not():
    assert _lines("model.eval()", "with torch.no_grad(): pass_batch(model, torch.randn(8, 4))") == []


def test_a_helper_that_hands_back_numbers_is_not():
    # an RL agent's `choose_action` returning `a.detach().cpu().numpy()`: no graph outlives the call
    assert _lines("model.eval()", "pass_batch(model, torch.randn(8, 4))", ret="loss.item()") == []
