"""GL106's register_buffer fix when forward re-assigns the attribute with the tensor an RNN module
returns (`res, h = self.rnn(x, self.h)` then `self.h = h.detach()`, the fast.ai forum's LMModel5):
a tensor assigned to a registered buffer's name keeps it a buffer, so the fix stays safe. A later
assignment of something that is not a tensor (`self.h = 0` in `reset`) still withholds it."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn


class LMModel5(nn.Module):
    def __init__(self, vocab_sz, n_hidden, n_layers, bs):
        super().__init__()
        self.i_h = nn.Embedding(vocab_sz, n_hidden)
        self.rnn = nn.RNN(n_hidden, n_hidden, n_layers, batch_first=True)
        self.h_o = nn.Linear(n_hidden, vocab_sz)
        self.h = torch.zeros(n_layers, bs, n_hidden)

    def forward(self, x):
        res, h = self.rnn(self.i_h(x), self.h)
        self.h = h.detach()
        return self.h_o(res)

    def reset(self):
        RESET


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = LMModel5(12, 32, 2, 8).to(device)
xb = torch.randint(0, 12, (8, 6)).to(device)
out = model(xb)
'''

BUFFER = 'self.register_buffer("h", torch.zeros(n_layers, bs, n_hidden), persistent=False)'


def _text(reset="self.h.zero_()"):
    return TEXT.replace("RESET", reset)


def test_flagged_at_the_init_assignment():
    assert [(f.code, f.line) for f in check(_text(), ["GL106"])] == [("GL106", 11)]


def test_fix_registers_a_buffer_when_forward_reassigns_the_returned_state():
    out = fix(_text(), ["GL106"], unsafe=False).text
    assert BUFFER in out
    assert "self.h = h.detach()" in out


def test_fix_withheld_when_another_method_assigns_a_number():
    out = fix(_text("self.h = 0"), ["GL106"], unsafe=True).text
    assert BUFFER not in out
