"""GL402 on a dict whose item is backpropagated (`output["loss"].backward()`) and which is then
stored whole (`outputs.append(output)`): reported without a fix (`.item()`/`.detach()` do not apply
to a dict), and silent when the loss inside it is detached first (packnet-sfm PR #51)."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
outputs = []
for x in [torch.randn(2, 4) for _ in range(3)]:
    opt.zero_grad()
    output = {"loss": model(x).pow(2).mean(), "n": 2}
    output["loss"].backward()
    opt.step()
{detach}    outputs.append(output)
"""


def _src(detach: str) -> str:
    return textwrap.dedent(SRC).replace("{detach}", detach)


def test_stored_container_is_reported_without_a_fix():
    src = _src("")
    diags = [d for d in check(src, {"GL402"}) if d.code == "GL402"]
    assert [d.line for d in diags] == [13]
    assert "detach the loss inside it" in diags[0].message
    out = fix(src, {"GL402"}, unsafe=True)
    assert out.text == src  # no `.item()` / `.detach()` on the dict


def test_loss_detached_inside_the_container_is_silent():
    src = _src('    output["loss"] = output["loss"].detach()\n')
    assert [d for d in check(src, {"GL402"}) if d.code == "GL402"] == []


def test_a_loss_item_accumulated_still_gets_its_fix():
    src = textwrap.dedent(SRC).replace("{detach}    outputs.append(output)", '    outputs.append(output["loss"])')
    diags = [d for d in check(src, {"GL402"}) if d.code == "GL402"]
    assert [d.line for d in diags] == [13]
    out = fix(src, {"GL402"}, unsafe=False)
    assert 'outputs.append(output["loss"].item())' in out.text or 'outputs.append(output["loss"].detach())' in out.text
