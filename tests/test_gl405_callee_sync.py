"""GL405 follows file functions the step loop calls unconditionally (G58-1): a host sync such a
function runs on every call (not under its own condition, no conditional `return` before it) runs
every step, for the calls that make the loss the loop backpropagates or run the backward / the
optimizer step themselves (and, inside them, functions that do). A metric helper, a periodic helper (`if step % n: return` first, or the sync under an `if`), and a
helper called only under a condition of the loop, stay silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def compute_loss(out, step):
    loss = out.pow(2).mean()
    BODY
    return loss


def report(loss):
    print("loss:", loss)


def backward_and_log(loss):
    loss.backward()
    print("loss:", loss)


def train_step(x):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    backward_and_log(loss)
    opt.step()
    return loss.detach()


for step in range(10):
    x = torch.randn(8, 4, device=device)
    CALL
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _lines(body='print("loss:", loss)', call="loss = compute_loss(model(x), step)"):
    text = TEXT.replace("BODY", body).replace("CALL", call)
    return [f.line for f in check(text, {"GL405"})]


def test_print_in_a_helper_called_every_step_is_reported():
    assert _lines() == [11]


def test_item_in_a_helper_called_every_step_is_reported():
    assert _lines(body="value = loss.item()") == [11]


def test_two_levels_of_training_helpers_are_followed():
    text = TEXT.replace("BODY", "pass").replace(
        "CALL\n    opt.zero_grad()\n    loss.backward()\n    opt.step()", "loss = train_step(x)")
    assert [f.line for f in check(text, {"GL405"})] == [21]


def test_metric_helper_is_not_followed():
    assert _lines(call="loss = model(x).pow(2).mean()\n    compute_loss(model(x), step)") == []


def test_non_training_helper_of_the_loss_function_is_not_followed():
    assert _lines(body="report(loss)") == []


def test_sync_under_the_helpers_own_condition_is_silent():
    assert _lines(body='if step % 10 == 0:\n        print("loss:", loss)') == []


def test_sync_after_a_conditional_return_is_silent():
    assert _lines(body='if step % 10:\n        return loss\n    print("loss:", loss)') == []


def test_helper_called_under_a_loop_condition_is_silent():
    assert _lines(call="loss = model(x).pow(2).mean()\n    if step % 10 == 0:\n        compute_loss(model(x), step)") == []
