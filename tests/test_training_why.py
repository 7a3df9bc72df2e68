"""Why GL401 and GL402 matter, shown on CPU with real torch rather than asserted.

GL401: without zero_grad, `.grad` after two steps is the sum of both steps' gradients, and the
updates use that sum. GL402: an accumulator fed with the raw loss holds a grad_fn whose graph grows
every iteration (one more chain of autograd nodes per step, never freed while the accumulator
lives); `.item()`/`.detach()` accumulators hold no graph at all.
"""

from __future__ import annotations

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def _setup(seed=0):
    torch.manual_seed(seed)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: parameters stay put, grads comparable
    batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(2)]
    return model, opt, batches


def _grad_after_two_steps(zero_grad: bool) -> torch.Tensor:
    model, opt, batches = _setup()
    for x, y in batches:
        if zero_grad:
            opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return model.weight.grad.clone()


def _single_batch_grad(i: int) -> torch.Tensor:
    model, _, batches = _setup()
    x, y = batches[i]
    nn.functional.mse_loss(model(x), y).backward()
    return model.weight.grad.clone()


def test_gl401_gradients_pile_up_without_zero_grad():
    with_zero = _grad_after_two_steps(zero_grad=True)
    without = _grad_after_two_steps(zero_grad=False)
    g0, g1 = _single_batch_grad(0), _single_batch_grad(1)
    # with zero_grad, step 2 sees only batch 2's gradient
    assert torch.allclose(with_zero, g1)
    # without it, .grad is the sum of both batches' gradients: stale gradient in every step
    assert torch.allclose(without, g0 + g1)
    assert not torch.allclose(without, with_zero)


def test_gl401_fixed_loop_trains_better():
    """With a real learning rate, the missing zero_grad makes the effective step grow every
    iteration; the loss after the same number of steps is worse."""

    def run(zero_grad: bool) -> float:
        torch.manual_seed(0)
        x = torch.randn(256, 4)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(40):
            if zero_grad:
                opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        return nn.functional.mse_loss(model(x), y).item()

    good, bad = run(True), run(False)
    assert good < 0.05
    assert bad > 10 * good


def _graph_size(t) -> int:
    """Number of autograd nodes reachable from t.grad_fn."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack.extend(next_fn for next_fn, _ in fn.next_functions)
    return len(seen)


def _accumulate(mode: str, steps: int):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total = torch.zeros(()) if mode != "item" else 0.0
    probes = []
    for _ in range(steps):
        opt.zero_grad()
        x = torch.randn(32, 16)
        hidden = model[0](x)
        probes.append(weakref.ref(hidden))  # an activation saved for backward
        loss = model[2](model[1](hidden)).pow(2).mean()
        loss.backward()
        opt.step()
        if mode == "raw":
            total = total + loss
        elif mode == "detach":
            total = total + loss.detach()
        else:
            total += loss.item()
        del hidden, loss, x
    gc.collect()
    alive = sum(p() is not None for p in probes)
    return total, alive


def test_gl402_raw_loss_accumulator_keeps_growing_graph():
    small, _ = _accumulate("raw", 3)
    big, alive = _accumulate("raw", 12)
    assert big.grad_fn is not None and big.requires_grad
    # the graph behind the accumulator grows with the number of iterations
    assert _graph_size(big) > _graph_size(small) + 9 * 3
    per_step = (_graph_size(big) - _graph_size(small)) / 9
    assert per_step >= 3  # each iteration adds its own loss graph (Mean, Pow, Linear, ReLU, ...)
    # the old iterations' graphs are still linked: differentiating the sum reaches them, and
    # their saved tensors were already freed by each step's backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        big.backward()
    # the saved activations themselves are freed by backward(): the leak is the graph
    assert alive == 0


@pytest.mark.parametrize("mode", ["detach", "item"])
def test_gl402_fixed_accumulator_holds_no_graph(mode):
    total, alive = _accumulate(mode, 12)
    if mode == "detach":
        assert total.grad_fn is None and not total.requires_grad
    else:
        assert isinstance(total, float)
    assert alive == 0


def test_gl402_same_value_either_way():
    raw, _ = _accumulate("raw", 5)
    item, _ = _accumulate("item", 5)
    detached, _ = _accumulate("detach", 5)
    assert abs(raw.item() - item) < 1e-4 and abs(detached.item() - item) < 1e-4
