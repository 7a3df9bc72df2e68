"""GL201 when the file's only GradScaler is built with a literal `enabled=False`
(oumi-ai/oumi#342: the trainer routed every step through `self.scaler` but never enabled it):
the scaler passes everything through, so float16 autocast trains without loss scaling."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled={enabled})
data = [(torch.randn(2, 4).cuda(), torch.randn(2, 1).cuda()) for _ in range(3)]
for x, y in data:
    optimizer.zero_grad()
    with torch.autocast(device_type="cuda"{autocast}):
        loss = ((model(x) - y) ** 2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""


def _run(enabled="False", autocast=""):
    src = textwrap.dedent(SRC.format(enabled=enabled, autocast=autocast))
    return [d for d in check(src, {"GL201"}) if d.code == "GL201"], src


def test_disabled_scaler_under_fp16_autocast():
    diags, src = _run()
    assert [d.line for d in diags] == [11]
    assert "enabled=False" in diags[0].message and "line 7" in diags[0].message
    assert fix(src, {"GL201"}, True).text == src  # no fix: enabling it is the author's call


def test_scaler_enabled_by_a_condition_is_left_alone():
    diags, _ = _run(enabled="torch.cuda.is_available()")
    assert diags == []


def test_disabled_scaler_with_bf16_autocast_is_left_alone():
    diags, _ = _run(autocast=", dtype=torch.bfloat16")
    assert diags == []


def test_disabled_autocast_and_scaler_are_left_alone():
    diags, _ = _run(autocast=", enabled=False")
    assert diags == []


def test_scaler_handed_in_is_left_alone():
    src = textwrap.dedent("""
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        off = torch.amp.GradScaler("cuda", enabled=False)


        def train(scaler, data):
            for x, y in data:
                optimizer.zero_grad()
                with torch.autocast(device_type="cuda"):
                    loss = ((model(x) - y) ** 2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        """)
    assert [d for d in check(src, {"GL201"}) if d.code == "GL201"] == []
