"""GL101 stays silent when the called model's own `forward` moves the batch parameter, even under a
condition (duoke360.com/post/34766's `SmartModel`: `if not x.is_cuda and next(self.parameters()).is_cuda:
x = x.cuda()`): the batch is moved exactly when the model is on the GPU. A move of another parameter
of forward does not silence it."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
from torch.utils.data import DataLoader, TensorDataset


class SmartModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(10, 5)

    def forward(self, x, scale=None):
        MOVE
        return self.layer(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SmartModel().to(device)
loader = DataLoader(TensorDataset(torch.randn(32, 10)), batch_size=8)
for (input_data,) in loader:
    output = model(input_data)
'''

CONDITIONAL = "if not x.is_cuda and next(self.parameters()).is_cuda:\n            x = x.cuda()"


def codes(move):
    text = TEXT.replace("MOVE", move)
    return [(f.code, f.line) for f in check(text, ["GL101"])]


def call_line(move):
    lines = TEXT.replace("MOVE", move).splitlines()
    return next(i for i, line in enumerate(lines, 1) if "output = model(" in line)


def test_conditional_move_of_the_batch_parameter_is_silent():
    assert codes(CONDITIONAL) == []


def test_conditional_to_of_the_batch_parameter_is_silent():
    assert codes("if x.device != self.layer.weight.device:\n            x = x.to(self.layer.weight.device)") == []


def test_forward_without_a_move_is_flagged():
    assert codes("pass") == [("GL101", call_line("pass"))]


def test_move_of_another_parameter_is_flagged():
    move = "if scale is not None and not scale.is_cuda:\n            scale = scale.cuda()"
    assert codes(move) == [("GL101", call_line(move))]
