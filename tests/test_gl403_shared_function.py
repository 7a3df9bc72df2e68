"""GL403 at the evaluation call of a function shared by training and evaluation, whose gradient
work depends on its arguments (henryhungle/MTN#7: `run_epoch(valid_data, model,
SimpleLossCompute(criterion, opt=None))` after `model.eval()`)."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

HEAD = """
import torch
import torch.nn as nn
from external import make_loss

model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
train_loader = [(torch.randn(2, 4), torch.tensor([0, 1]))]
val_loader = [(torch.randn(2, 4), torch.tensor([1, 0]))]

def run_epoch(loader, model, optimizer=None, train=True):
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        if optimizer is not None and train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total
"""


def _run(body: str):
    src = textwrap.dedent(HEAD) + textwrap.dedent(body)
    lines = [d.line for d in check(src, {"GL403"}) if d.code == "GL403"]
    return lines, src.count("\n"), src


def test_default_none_optimizer_at_the_validation_call():
    lines, n, src = _run("""
        for epoch in range(2):
            model.train()
            run_epoch(train_loader, model, opt)
            model.eval()
            val = run_epoch(val_loader, model)
        """)
    assert lines == [n]
    out = fix(src, {"GL403"}, unsafe=False).text
    assert "    with torch.no_grad():\n        val = run_epoch(val_loader, model)\n" in out


def test_flag_false_switches_the_backward_off():
    lines, n, _ = _run("""
        model.eval()
        val = run_epoch(val_loader, model, opt, train=False)
        """)
    assert lines == [n]


def test_optimizer_given_after_eval_is_training_with_frozen_statistics():
    lines, _, _ = _run("""
        model.eval()
        val = run_epoch(train_loader, model, opt)
        """)
    assert lines == []


def test_unknown_optimizer_value_or_not_in_eval_mode():
    lines, _, _ = _run("""
        maybe = opt if len(train_loader) > 1 else None
        model.eval()
        val = run_epoch(val_loader, model, maybe)
        model.train()
        val = run_epoch(val_loader, model)
        """)
    assert lines == []


def test_unknown_callable_argument_stays_silent():
    src = textwrap.dedent(HEAD) + textwrap.dedent("""
        def run_with(loader, model, loss_compute):
            for x, y in loader:
                loss_compute(model(x), y)

        model.train()
        run_with(train_loader, model, make_loss(opt))
        model.eval()
        run_with(val_loader, model, make_loss(None))
        """)
    assert [d.line for d in check(src, {"GL403"})] == []


def test_caller_differentiates_what_it_gets_back():
    src = textwrap.dedent(HEAD) + textwrap.dedent("""
        def total_loss(loader, model):
            out = 0
            for x, y in loader:
                out = out + criterion(model(x), y)
            return out

        model.train()
        total_loss(train_loader, model).backward()
        model.eval()
        loss = total_loss(val_loader, model)
        loss.backward()
        """)
    assert [d.line for d in check(src, {"GL403"})] == []


def test_result_handed_to_a_function_that_backpropagates():
    src = textwrap.dedent(HEAD) + textwrap.dedent("""
        def outputs(loader, model):
            return [model(x) for x, _ in loader][0]

        def forward_all(loader, model):
            outs = []
            for x, y in loader:
                outs.append(model(x))
            return outs

        def fit(outs):
            torch.stack(outs).sum().backward()
            opt.step()

        model.train()
        fit(forward_all(train_loader, model))
        model.eval()
        outs = forward_all(val_loader, model)
        fit(outs)
        """)
    assert [d.line for d in check(src, {"GL403"})] == []
