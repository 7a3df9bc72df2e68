"""GL106: an attribute made an `nn.Parameter` only on a path no construction takes (fixtures38 G38-1).

TheLastBen/fast-stable-diffusion#946 (latent diffusion's DDPM,
tests/fixtures/GL106/ldm_ddpm_logvar_plain_tensor_indexed_by_device_timesteps.py):
`self.logvar = torch.zeros(T)`, then `if learn_logvar: self.logvar = nn.Parameter(self.logvar)`,
with every construction leaving `learn_logvar` False: the attribute stays a plain tensor, which
`model.to(device)` does not move, and forward indexes it with device timesteps. The rule skipped
every attribute assigned a Parameter anywhere in the class.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DDPM(nn.Module):
    def __init__(self, learn_logvar=False):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.logvar = torch.zeros(10)
        if learn_logvar:
            self.logvar = nn.Parameter(self.logvar)

    def forward(self, x):
        t = torch.randint(0, 10, (x.shape[0],), device=x.device)
        return self.lin(x) + self.logvar[t][:, None]


model = DDPM({args}).to(device)
print(model(torch.randn(2, 4).to(device)))
"""


def _lines(args: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in ("GL106", "GL116")]
    diags = run_text("train.py", textwrap.dedent(SRC.format(args=args)), rules, Options()).diagnostics
    return sorted((d.line, d.code) for d in diags)


def test_a_parameter_no_construction_makes_leaves_a_plain_tensor():
    assert _lines("") == [(12, "GL106")]


def test_a_construction_that_makes_it_a_parameter_is_silent():
    assert _lines("learn_logvar=True") == []
