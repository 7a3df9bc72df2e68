"""GL405 reports a tensor formatted into a string every step (G58-2): `print(f"loss {loss}")`,
`"loss %.3f" % loss`, `"{}".format(loss)`, `str(loss)` and an f-string passed to a logger copy the
value to the host like `print(loss)`. Strings formatted from shapes, devices, dtypes, Python numbers
or `.item()` results, and a periodic formatted print, stay silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import logging

import torch
import torch.nn as nn

log = logging.getLogger(__name__)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4, device=device)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    BODY
'''


def _lines(body):
    text = TEXT.replace("BODY", body)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if body.splitlines()[0].strip() in s)
    return line, [f.line for f in check(text, {"GL405"})]


def test_fstring_of_the_loss_in_print_is_reported():
    line, got = _lines('print(f"step {step}: loss {loss}")')
    assert got == [line]


def test_fstring_of_the_loss_with_a_format_spec_is_reported():
    line, got = _lines('print(f"loss {loss:.4f}")')
    assert got == [line]


def test_fstring_of_the_loss_passed_to_a_logger_is_reported():
    line, got = _lines('log.info(f"loss {loss}")')
    assert got == [line]


def test_str_format_of_the_loss_is_reported():
    line, got = _lines('print("loss {}".format(loss))')
    assert got == [line]


def test_str_of_the_loss_is_reported():
    line, got = _lines('text = str(loss)')
    assert got == [line]


def test_percent_format_of_the_loss_in_a_tuple_is_reported():
    line, got = _lines('log.info("step %d loss %s" % (step, loss))')
    assert got == [line]


def test_strings_of_shapes_devices_and_numbers_are_silent():
    _, got = _lines(
        'print(f"step {step} {x.shape} {x.device} {loss.dtype} {opt.param_groups[0][\'lr\']}")\n'
        '    log.info("shape %s" % (x.shape,))\n'
        '    print("n {}".format(x.size(0)), str(x.shape))'
    )
    assert got == []


def test_periodic_fstring_of_the_loss_is_silent():
    _, got = _lines('if step % 100 == 0:\n        print(f"loss {loss}")')
    assert got == []


def test_fstring_of_item_is_reported_once():
    line, got = _lines('print(f"loss {loss.item():.4f}")')
    assert got == [line]
