"""amp35: a scaled backward written in two statements (E35-1), a scaler parameter that no call in
the file fills (E35-2), and GL201 following a backward in a helper the autocast loop calls (G35-1).
The positive cases fail on the base 260417e; the hard negatives are correct code that scales."""

from __future__ import annotations

import textwrap

import libcst as cst
from fixture_support import check

from gpulint.analysis.amp import AmpFacts
from gpulint.model import ScriptModel


def facts(src: str) -> AmpFacts:
    return ScriptModel(cst.parse_module(textwrap.dedent(src))).facts(AmpFacts)


def codes(src: str, *select: str):
    return [(d.line, d.code) for d in check(textwrap.dedent(src), set(select))]


GL2 = ("GL201", "GL202", "GL203", "GL204", "GL206", "GL207")

HEAD = """\
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=device == "cuda")
"""

# E35-1 ------------------------------------------------------------------------------------------

TWO_STATEMENTS_CLIP = HEAD + """

def step(loss):
    scaled_loss = scaler.scale(loss)
    scaled_loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()


for _ in range(3):
    x = torch.randn(16, 8, device=device)
    with torch.autocast(device_type=device, dtype=torch.float16, enabled=device == "cuda"):
        loss = model(x).pow(2).mean()
    step(loss)
"""


def test_two_statement_scaled_backward_is_scaled():
    f = facts(TWO_STATEMENTS_CLIP)
    (b,) = f.backwards
    assert b.scaler == "scaler"
    assert f.text(b.loss) == "loss"
    assert f.text(b.scaler_node) == "scaler"


def test_two_statement_clip_before_unscale_gl202():
    assert codes(TWO_STATEMENTS_CLIP, *GL2) == [(13, "GL202")]


def test_two_statement_step_bypasses_scaler_gl203():
    src = HEAD + """
for _ in range(3):
    x = torch.randn(16, 8, device=device)
    with torch.autocast(device_type=device, dtype=torch.float16, enabled=device == "cuda"):
        loss = model(x).pow(2).mean()
    scaled = scaler.scale(loss)
    scaled.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
    assert "GL203" in {c for _, c in codes(src, *GL2)}


def test_two_statement_correct_loop_is_silent():
    # hard negative: scale, unscale_, clip, step, update in two-statement form
    src = HEAD + """
for _ in range(3):
    x = torch.randn(16, 8, device=device)
    with torch.autocast(device_type=device, dtype=torch.float16, enabled=device == "cuda"):
        loss = model(x).pow(2).mean()
    scaled_loss = scaler.scale(loss)
    scaled_loss.backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
"""
    assert codes(src, *GL2) == []


def test_name_bound_twice_is_not_followed():
    # `out` is also bound to the plain loss: which one runs backward is not known, stay as before
    src = HEAD + """
for i in range(3):
    loss = model(torch.randn(16, 8, device=device)).pow(2).mean()
    out = scaler.scale(loss)
    if i == 0:
        out = loss
    out.backward()
"""
    (b,) = facts(src).backwards
    assert b.scaler is None


# E35-2 ------------------------------------------------------------------------------------------

HELPER = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def step(model, optimizer, loss, scaler=None):
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    optimizer.zero_grad()


def train_one_epoch(model, optimizer, x, scaler=None):
    with torch.autocast(device_type=device.type, dtype=torch.float16):
        loss = model(x).pow(2).mean()
    step(model, optimizer, loss, scaler=scaler)


model = nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""

NEVER_PASSED = HELPER + """for epoch in range(3):
    train_one_epoch(model, optimizer, torch.randn(16, 8, device=device))
"""


def test_scaler_never_passed_is_no_loss_scaling():
    assert not facts(NEVER_PASSED).uses_loss_scaling


def test_scaler_never_passed_gl201():
    assert codes(NEVER_PASSED, *GL2) == [(19, "GL201")]


def test_scaler_passed_as_none_gl201():
    src = HELPER + """for epoch in range(3):
    train_one_epoch(model, optimizer, torch.randn(16, 8, device=device), scaler=None)
"""
    assert codes(src, *GL2) == [(19, "GL201")]


def test_caller_passes_a_real_scaler_is_silent():
    # hard negative: main builds a GradScaler and hands it down
    src = HELPER + """scaler = torch.amp.GradScaler("cuda")
for epoch in range(3):
    train_one_epoch(model, optimizer, torch.randn(16, 8, device=device), scaler=scaler)
"""
    assert facts(src).uses_loss_scaling
    assert codes(src, *GL2) == []


def test_scaler_from_elsewhere_is_silent():
    # hard negative: the scaler comes from an unknown call (another module), not a GradScaler(...) here
    src = HELPER + """from mylib import make_scaler
for epoch in range(3):
    train_one_epoch(model, optimizer, torch.randn(16, 8, device=device), scaler=make_scaler())
"""
    assert facts(src).uses_loss_scaling
    assert codes(src, *GL2) == []


def test_unused_library_helper_is_loss_scaling():
    # hard negative: a helper never called in the file (library code) keeps counting as scaling
    src = """\
import torch


def train_step(model, optimizer, x, scaler=None):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).pow(2).mean()
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
"""
    assert facts(src).uses_loss_scaling
    assert codes(src, *GL2) == []


def test_helper_handed_around_is_loss_scaling():
    # hard negative: the helper escapes (`functools.partial`), its calls are not all visible
    src = HELPER + """import functools
run = functools.partial(step, scaler=torch.amp.GradScaler("cuda"))
for epoch in range(3):
    train_one_epoch(model, optimizer, torch.randn(16, 8, device=device))
"""
    # a GradScaler is built: loss scaling, whatever the helper's calls
    assert facts(src).uses_loss_scaling
    src = HELPER + """from mylib import register
register(step)
for epoch in range(3):
    train_one_epoch(model, optimizer, torch.randn(16, 8, device=device))
"""
    assert facts(src).uses_loss_scaling


def test_dead_unscale_does_not_count():
    src = """\
import torch


def step(model, optimizer, loss, scaler=None):
    if scaler is not None:
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()


model = torch.nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    with torch.autocast("cuda"):
        loss = model(torch.randn(4, 8, device="cuda")).sum()
    step(model, optimizer, loss)
"""
    assert not facts(src).uses_loss_scaling
    assert codes(src, *GL2) == [(19, "GL201")]


# G35-1 ------------------------------------------------------------------------------------------


def test_gl201_follows_backward_in_called_helper():
    src = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def step(optimizer, loss):
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


model = nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    with torch.autocast(device_type=device.type, dtype=torch.float16):
        loss = model(torch.randn(16, 8, device=device)).pow(2).mean()
    step(optimizer, loss)
"""
    assert codes(src, *GL2) == [(16, "GL201")]


def test_gl201_helper_not_given_the_region_value_is_silent():
    # hard negative: autocast only in an evaluation pass; the training helper gets other data
    src = """\
import torch
import torch.nn as nn


def train(model, optimizer, x):
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


model = nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    with torch.autocast("cuda"):
        preview = model(torch.randn(16, 8, device="cuda"))
    train(model, optimizer, torch.randn(16, 8, device="cuda"))
"""
    assert codes(src, *GL2) == []


def test_gl201_helper_with_scaler_is_silent():
    # hard negative: the helper scales with the file's GradScaler
    src = """\
import torch
import torch.nn as nn

scaler = torch.amp.GradScaler("cuda")


def step(optimizer, loss):
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()


model = nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    with torch.autocast("cuda"):
        loss = model(torch.randn(16, 8, device="cuda")).pow(2).mean()
    step(optimizer, loss)
"""
    assert codes(src, *GL2) == []
