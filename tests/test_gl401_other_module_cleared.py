"""GL401: a step function whose only clears are other modules' `zero_grad()` while it steps an
optimizer a module of the file owns (code-soup#73's GAN: `self.generator.zero_grad()` only, then
`self.discriminator.optimizer.step()`; fixtures27's F27-1). The discriminator's gradients, also
those of the generator's backward through it, pile up across steps.
"""

from __future__ import annotations

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(2, 1)
        self.optimizer = torch.optim.Adam({params})

    def forward(self, x):
        return self.net(x)


class G(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(2, 2)
        self.optimizer = torch.optim.Adam(self.parameters())

    def forward(self, x):
        return self.net(x)


class GAN:
    def __init__(self):
        self.g = G()
        self.d = D()

    def step(self, x):
        {clear_d}
        self.d(x).mean().backward()
        self.d.optimizer.step()
        self.g.zero_grad()
        self.d(self.g(x)).mean().backward()
        self.g.optimizer.step()


gan = GAN()
for x in [torch.randn(4, 2) for _ in range(3)]:
    gan.step(x)
"""


def gl401(clear_d: str = "pass", params: str = "self.parameters()") -> list[int]:
    rule = Registry.load().by_code("GL401")()
    src = SRC.replace("{clear_d}", clear_d).replace("{params}", params)
    return [d.line for d in run_text("gan.py", src, [rule], Options()).diagnostics]


def test_the_discriminator_never_cleared():
    assert gl401() == [34]


def test_hard_negatives():
    assert gl401("self.d.zero_grad()") == []
    # an optimizer's own zero_grad: which parameters it covers is its business
    assert gl401("self.d.optimizer.zero_grad()") == []
    # an optimizer the module does not build over its own parameters
    assert gl401(params="[torch.nn.Parameter(torch.zeros(1))]") == []
