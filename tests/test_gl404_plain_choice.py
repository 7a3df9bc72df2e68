"""GL404: an `if`/`else` that only picks plain values (the loader to iterate) between a frozen
encoder's `eval()` and the loop that trains its head does not hide the deliberate eval
(MoCo-Pytorch's `finetune`, benchmarks/PRECISION42.md P42-1)."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn


def evaluate(encoder, loader):
    encoder.eval()
    with torch.no_grad():
        return sum(float(encoder(x).sum()) for x, _ in loader)


def finetune(encoder, loader, optimiser, epochs, verbose):
    for epoch in range(epochs):
        encoder.eval()
{choice}
        for x, y in batches:
            loss = nn.functional.cross_entropy(encoder(x), y)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        evaluate(encoder, loader)


encoder = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
for p in encoder[:2].parameters():
    p.requires_grad = False
opt = torch.optim.SGD(encoder[2].parameters(), lr=0.1)
finetune(encoder, [(torch.randn(4, 8), torch.randint(0, 2, (4,)))], opt, 2, False)
"""

PLAIN = """        if verbose:
            batches = list(loader)
        else:
            batches = loader"""


def _lines(src: str) -> list[int]:
    rule = Registry.load().by_code("GL404")()
    return sorted(d.line for d in run_text("train.py", textwrap.dedent(src), [rule], Options()).diagnostics)


def test_a_loader_chosen_in_an_if_else_keeps_the_eval_deliberate():
    assert _lines(SRC.format(choice=PLAIN)) == []


def test_the_eval_is_still_reported_when_the_if_could_switch_modes_or_mentions_the_model():
    # a function of the file called in the `if` (it could put the model back in train mode)
    src = SRC.format(choice=PLAIN.replace("list(loader)", "prepare(loader)")) + "\n\ndef prepare(loader):\n    return list(loader)\n"
    assert _lines(src) != []
    # the `if` reads the model
    assert _lines(SRC.format(choice=PLAIN.replace("batches = loader", "batches = loader\n            print(encoder)"))) != []
    # a loop inside the `if`
    loop = PLAIN.replace("batches = list(loader)", "batches = [b for b in loader]\n            for b in batches:\n                pass")
    assert _lines(SRC.format(choice=loop)) != []
