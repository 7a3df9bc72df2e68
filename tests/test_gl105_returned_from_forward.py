"""GL105: a factory in `forward` whose host tensor forward returns and the caller meets with
device tensors (seq2seq decoders and ConvLSTM layers that allocate their output sequence with
`torch.zeros(...)` and fill it step by step) is reported at the factory, with the safe
`device=<forward's first tensor input>.device` fix, not as a GL116 at the caller's loss."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SEQ2SEQ = """
import torch
import torch.nn as nn


class Seq2Seq(nn.Module):
    def __init__(self, enc, dec):
        super().__init__()
        self.enc = enc
        self.dec = dec

    def forward(self, src, trg):
        trg_len, batch_size = trg.shape[0], trg.shape[1]
        outputs = torch.zeros(trg_len, batch_size, 5)
        hidden = self.enc(src)
        for t in range(1, trg_len):
            outputs[t] = self.dec(hidden)
        return outputs


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Seq2Seq(nn.Linear(3, 4), nn.Linear(4, 5)).to(device)
src = torch.randn(2, 3, device=device)
trg = torch.zeros(4, 2, dtype=torch.long, device=device)
out = model(src, trg)
loss = nn.functional.cross_entropy(out[1:].view(-1, 5), trg[1:].view(-1))
"""


def run(src: str, fix: bool = False):
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in ("GL105", "GL116")]
    return run_text("t.py", textwrap.dedent(src), rules, Options(fix=fix))


def test_reported_at_the_factory_not_at_the_loss():
    res = run(SEQ2SEQ)
    assert [(d.code, d.line) for d in res.diagnostics] == [("GL105", 14)]
    assert "device=src.device" in res.diagnostics[0].message


def test_safe_fix_uses_forward_input():
    res = run(SEQ2SEQ, fix=True)
    assert "outputs = torch.zeros(trg_len, batch_size, 5, device=src.device)" in res.text
    assert run(res.text).diagnostics == []


def test_buffer_on_the_input_device_is_silent():
    assert run(SEQ2SEQ.replace("torch.zeros(trg_len, batch_size, 5)",
                               "torch.zeros(trg_len, batch_size, 5, device=src.device)")).diagnostics == []


def test_host_output_used_on_the_host_is_silent():
    # the caller only reads the result on the host: nothing meets
    src = SEQ2SEQ.replace(
        "loss = nn.functional.cross_entropy(out[1:].view(-1, 5), trg[1:].view(-1))",
        "print(out.argmax(-1).numpy())")
    assert run(src).diagnostics == []


def test_module_never_moved_is_silent():
    src = SEQ2SEQ.replace(".to(device)", "").replace(", device=device)", ")")
    assert run(src).diagnostics == []
