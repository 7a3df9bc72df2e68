"""GL116 on timbmg/VAE-CVAE-MNIST#4's shapes: a host factory of a helper with a safe `device=` fix
at one use is reported once (the fix places every later use), and the unsafe input move at a
module call is not offered for a parameter whose default is None (`c.to(...)` raises on the calls
that leave it out)."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

ONEHOT = """
import torch
import torch.nn as nn


def idx2onehot(idx, n):
    onehot = torch.zeros(idx.size(0), n)
    onehot.scatter_(1, idx, 1)
    return onehot


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(14, 2)

    def forward(self, x, c):
        c = idx2onehot(c, n=10)
        x = torch.cat((x, c), dim=-1)
        return self.fc(x)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
enc = Encoder().to(device)
x = torch.randn(8, 4).to(device)
y = torch.randint(0, 10, (8, 1)).to(device)
print(enc(x, y))
"""

NONE_DEFAULT = """
import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, z, c):
        if c is not None:
            z = torch.cat((z, c), dim=-1)
        else:
            z = torch.cat((z, torch.zeros(z.size(0), 1, device=z.device)), dim=-1)
        return self.fc(z)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()

    def forward(self, z, c=None):
        return self.decoder(z, c)

    def inference(self, n=1, c=None):
        z = torch.randn([n, 2])
        recon_x = self.decoder(z, c)
        return recon_x


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vae = VAE().to(device)
print(vae.inference(n=4, c=torch.ones(4, 1)), vae.inference(n=4))
"""


def test_one_report_for_a_helper_factory_with_a_safe_fix():
    lines = sorted(d.line for d in check(textwrap.dedent(ONEHOT), {"GL116"}) if d.code == "GL116")
    assert lines == [8]  # the scatter_, not the concatenation in forward
    out = fix(textwrap.dedent(ONEHOT), {"GL116"}, unsafe=False).text
    assert "torch.zeros(idx.size(0), n, device=idx.device)" in out


def test_no_input_move_for_a_none_default_parameter():
    diags = [d for d in check(textwrap.dedent(NONE_DEFAULT), {"GL116"}) if d.code == "GL116"]
    assert 29 in [d.line for d in diags]  # `self.decoder(z, c)` in inference is reported ...
    out = fix(textwrap.dedent(NONE_DEFAULT), {"GL116"}, unsafe=True).text
    assert "c.to(" not in out  # ... but `c` (default None) is never moved by a fix
