"""GL204: an `unscale_` whose `update()` runs only in one branch of an `if`/`else` whose other
branch neither steps nor updates (it only logs "Skipping updating the model": espnet#2362) leaves
the optimizer unscaled on that path. Before, any `else` silenced the rule. An `else` that steps
the optimizer itself or the scaler, or leaves the loop, stays silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import logging

import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
for step in range(20):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if not torch.isfinite(grad_norm):
        SKIP
    else:
        scaler.step(opt)
        scaler.update()
    opt.zero_grad()
'''

SWAPPED = '''import logging

import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
for step in range(20):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if torch.isfinite(grad_norm):
        scaler.step(opt)
        scaler.update()
    else:
        logging.warning("skipping the step")
    opt.zero_grad()
'''

DISABLED = '''import torch
import torch.nn as nn

model = nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
use_amp = True
for step in range(20):
    with torch.autocast("cuda", dtype=torch.float16, enabled=use_amp):
        loss = model(torch.randn(8, 4, device="cuda")).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if use_amp:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    opt.zero_grad()
'''


def _gl204(text):
    return [(d.line, d.code) for d in check(text, {"GL204"}) if d.code == "GL204"]


def test_else_that_only_logs_leaves_the_optimizer_unscaled():
    assert _gl204(TEXT.replace("SKIP", 'logging.warning("skipping the step")')) == [(13, "GL204")]


def test_update_in_the_if_body_and_a_logging_else():
    assert _gl204(SWAPPED) == [(13, "GL204")]


def test_else_that_steps_and_updates_the_scaler():
    assert _gl204(TEXT.replace("SKIP", "scaler.step(opt)\n        scaler.update()")) == []
    assert _gl204(TEXT.replace("SKIP", "scaler.update()")) == []


def test_else_that_leaves_the_loop():
    assert _gl204(TEXT.replace("SKIP", 'raise RuntimeError("non-finite norm")')) == []
    assert _gl204(TEXT.replace("SKIP", "break")) == []


def test_else_that_steps_the_optimizer_itself():
    assert _gl204(DISABLED) == []
