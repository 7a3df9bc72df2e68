"""GL403: the retry of a `no_grad` model call in the `except` clause of its `try` is not an
evaluation with gradients left on (PRECISION43: pythae's trainers evaluate with
`try: with torch.no_grad(): out = self.model(x)` and, for models whose forward needs autograd
(RHVAE's leapfrog steps), `except RuntimeError: out = self.model(x)`). A `try` whose body calls the
model with gradients on, or an `except` clause that calls another model than the `try`, keeps the report."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, teacher, eval_loader, device):
        self.model = model.to(device)
        self.teacher = teacher.to(device)
        self.eval_loader = eval_loader
        self.device = device

    def eval_step(self, epoch):
        self.model.eval()
        epoch_loss = 0
        for inputs in self.eval_loader:
            inputs = inputs.to(self.device)
            try:
TRY
            except RuntimeError:
EXCEPT
            epoch_loss += out.pow(2).mean().item()
        return epoch_loss


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = Trainer(nn.Linear(4, 2), nn.Linear(4, 2), [torch.randn(3, 4)], device)
print(t.eval_step(0))
"""

NO_GRAD = """                with torch.no_grad():
                    out = self.model(inputs)"""
GRAD = "                out = self.model(inputs)"
RETRY = "                out = self.model(inputs)"
TEACHER_NO_GRAD = """                with torch.no_grad():
                    out = self.teacher(inputs)"""


def _lines(try_body: str, except_body: str) -> list[int]:
    src = SRC.replace("TRY", try_body).replace("EXCEPT", except_body)
    return [d.line for d in check(src, ["GL403"]) if d.code == "GL403"]


def test_retry_of_a_no_grad_call_is_silent():
    assert _lines(NO_GRAD, RETRY) == []


def test_try_body_with_gradients_on_keeps_the_report():
    assert _lines(GRAD, RETRY) != []


def test_except_clause_calling_another_model_keeps_the_report():
    # the `try` evaluates `self.teacher` under no_grad; the `except` clause runs `self.model`
    assert _lines(TEACHER_NO_GRAD, RETRY) != []
