"""GL116 on an LSTM given a tuple of host states (`self.h = (torch.zeros(...), torch.zeros(...))`,
the tuple-literal form of fastbook's LMModel6 state): a tuple has no `.to()`, so no
`self.h.to(...)` fix (the fix used to be two identical edits of `self.h`, dropped by the fixer as
unparseable), and the message says to move each tensor or register them as buffers."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, 1, batch_first=True)
        self.h = STATE

    def forward(self, x):
        res, h = self.rnn(x, self.h)
        return res


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = M().to(device)
out = model(torch.randn(2, 3, 4).to(device))
'''


def findings(state):
    return check(TEXT.replace("STATE", state), ["GL116"])


def test_tuple_of_host_states_has_no_to_fix():
    (f,) = findings("(torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))")
    assert f.line == 12
    assert f.fix is None
    assert "each of its tensors" in f.message
