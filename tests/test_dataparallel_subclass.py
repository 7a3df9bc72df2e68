"""A DataParallel subclass defined in the file is a DataParallel wrapper (fixtures35 E35-5).

tomodrgn's `DataParallelPassthrough(torch.nn.DataParallel)` (tests/fixtures/GL304/tomodrgn_train_vae_
passthrough_wrapper_state_dict.py): its `state_dict()` keys carry `module.` like its base's, so a
checkpoint saved through it does not load into the plain model (GL304), and it drives the GPUs
the way DataParallel does (GL301). Its `__getattr__` falls back to the wrapped module, so reading
the model's own attributes through it works: GL305 stays silent on such a subclass, and reports
one without that fallback.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class Passthrough(torch.nn.DataParallel):
{body}


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 2)

    def encode(self, x):
        return self.encoder(x)

    def forward(self, x):
        return self.encode(x)


model = VAE()
optim = torch.optim.SGD(model.parameters(), lr=0.1)
model = Passthrough(model)
for _ in range(3):
    loss = model.encode(torch.randn(8, 4)).pow(2).mean()
    optim.zero_grad()
    loss.backward()
    optim.step()
torch.save({"model_state_dict": model.state_dict()}, "/tmp/weights.pkl")
"""

GETATTR = """    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.module, name)"""


def _found(body: str) -> list[tuple[int, str]]:
    rules = [Registry.load().by_code(c)() for c in ("GL301", "GL304", "GL305")]
    src = textwrap.dedent(SRC).replace("{body}", body)
    return sorted((d.line, d.code) for d in run_text("train.py", src, rules, Options()).diagnostics)


def test_a_passthrough_subclass_is_a_wrapper_for_the_state_dict_and_the_gpus():
    assert _found(GETATTR) == [(28, "GL301"), (34, "GL304")]


def test_a_subclass_without_the_fallback_reads_attributes_through_the_wrapper():
    assert _found("    pass") == [(24, "GL301"), (26, "GL305"), (30, "GL304")]
