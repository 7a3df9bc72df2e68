"""GL202: a GradScaler built with `enabled=False` scales nothing, so clipping before `unscale_`
is right (benchmarks/PRECISION47.md P47-2, NVIDIA/DeepLearningExamples
PyTorch/SpeechRecognition/wav2vec2/train.py: `scaler = torch.cuda.amp.GradScaler(enabled=False)`
kept "future-proof for adoption of native AMP", `scaler.scale(loss).backward()`, then its own
optimizer wrapper's `optim.clip_grad_norm(...)` and `scaler.step(optim)`). Only a literal `False`
on every binding of the scaler counts: `enabled=True`, `enabled=args.amp` or a name bound again to
an enabled scaler keep the clip reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


def main(amp=True):
    model = nn.Linear(4, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", enabled={enabled})
{rebind}    for x, y in [(torch.randn(8, 4).cuda(), torch.randn(8, 1).cuda())]:
        loss = (model(x) - y).pow(2).mean()
        scaler.scale(loss).backward()
        {clip}
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()


main()
"""


def _lines(enabled="False", rebind="", clip="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"):
    text = textwrap.dedent(SRC).format(enabled=enabled, rebind=rebind, clip=clip)
    clip_line = next(i for i, line in enumerate(text.splitlines(), 1) if "clip_grad" in line)
    return sorted("clip" if d.line == clip_line else d.line for d in check(text, ["GL202"]) if d.code == "GL202")


def test_disabled_scaler_clip_is_silent():
    assert _lines() == []


def test_disabled_scaler_with_optimizer_wrapper_clip_method_is_silent():
    assert _lines(clip="opt.clip_grad_norm(1.0)") == []


def test_enabled_scaler_stays_reported():
    assert _lines(enabled="True") == ["clip"]


def test_scaler_enabled_by_a_flag_stays_reported():
    assert _lines(enabled="amp") == ["clip"]


def test_scaler_bound_again_to_an_enabled_one_stays_reported():
    assert _lines(rebind='    if amp:\n        scaler = torch.amp.GradScaler("cuda")\n') == ["clip"]
