"""GL403 through a helper also called under no_grad elsewhere (fixtures37 E37-2).

meta-recsys/generative-recommenders#387 (tests/fixtures/GL403/generative_recommenders_epoch_eval_loop_with_grad.py):
`eval_metrics_from_tensors(model, ...)` runs the model; the training loop calls it under
`torch.no_grad()`, the epoch's evaluation loop after `model.eval()` calls it with gradients on.
The helper's model call was "called with and without gradients" (dynamic), so the evaluation
loop's call was not reported. The mode that counts is the one inside the helper itself plus the
call being checked.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


def eval_metrics(model, x, y):
    {inner}scores = model(x)
    top = scores.topk(2, dim=1).indices
    return {{"hr": (top == y.unsqueeze(1)).any(dim=1).float()}}


model = nn.Linear(8, 5)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model.train()
    for _ in range(4):
        x, y = torch.randn(4, 8), torch.randint(0, 5, (4,))
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        with torch.no_grad():
            eval_metrics(model, x, y)
    model.eval()
    hits = []
    for _ in range(3):
        x, y = torch.randn(4, 8), torch.randint(0, 5, (4,))
        {outer}d = eval_metrics(model, x, y)
        hits.append(d["hr"])
"""


def _lines(src: str) -> list[int]:
    rule = Registry.load().by_code("GL403")()
    return [d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_the_evaluation_call_with_gradients_on_is_reported():
    assert _lines(SRC.format(inner="", outer="")) == [27]


def test_the_evaluation_call_under_no_grad_is_not():
    assert _lines(SRC.format(inner="", outer="with torch.no_grad():\n            ")) == []


def test_a_helper_that_turns_gradients_off_itself_is_not():
    assert _lines(SRC.format(inner="with torch.no_grad():\n        ", outer="")) == []
