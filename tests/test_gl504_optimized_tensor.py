"""GL504 is silent on a tensor an optimizer in the loop updates in place (DSE-MSU/DeepRobust
deeprobust/image/attack/l2_attack.py:107, the Carlini-Wagner L2 attack in a GAN's latent space:
`modifier = nn.Parameter(start)`, `optimizer = torch.optim.Adam([modifier, ], lr=...)`, then in the
iteration loop `nimgs = self.gan(modifier.to(self.device))`, `loss.backward()`,
`optimizer.step()`). The step changes `modifier` on every iteration: the copy cannot move above the
loop (it would keep the first value while the optimizer moves the original). A tensor the loop's
optimizer does not hold, or an optimizer that never steps in the loop, is still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
gan = nn.Linear(8, 8).to(device)
target = torch.randn(4, 8, device=device)
start = torch.zeros(4, 8)
modifier = nn.Parameter(start)
other = torch.zeros(4, 8)
optimizer = torch.optim.Adam(PARAMS, lr=0.1)
for i in range(10):
    optimizer.zero_grad()
    out = gan(modifier.to(device))
    loss = ((out - target) ** 2).sum()
    loss.backward()
    STEP
'''


def _lines(text):
    return [f.line for f in check(text, {"GL504"})]


def test_parameter_stepped_by_the_loop_optimizer_is_not_invariant():
    assert _lines(TEXT.replace("PARAMS", "[modifier, ]").replace("STEP", "optimizer.step()")) == []


def test_param_group_dict_counts_too():
    text = TEXT.replace("PARAMS", '[{"params": [modifier]}]').replace("STEP", "optimizer.step()")
    assert _lines(text) == []


def test_step_through_a_grad_scaler_counts_too():
    text = TEXT.replace("PARAMS", "[modifier]").replace(
        "STEP", "scaler.step(optimizer)").replace("device = torch", "scaler = torch.amp.GradScaler()\ndevice = torch")
    assert _lines(text) == []


def test_optimizer_over_another_tensor_is_reported():
    assert _lines(TEXT.replace("PARAMS", "[other]").replace("STEP", "optimizer.step()")) == [13]


def test_optimizer_that_does_not_step_in_the_loop_is_reported():
    assert _lines(TEXT.replace("PARAMS", "[modifier]").replace("STEP", "pass")) == [13]
