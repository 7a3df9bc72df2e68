"""GL504 and a receiver the binding table cannot type but the flow engine knows to be a host tensor
(E55-5, pytorch/pytorch#17854: `fy, fx = torch.meshgrid(...)` once, then `fx.float().cuda()` on
every step of the warp). The names unpacked from `torch.meshgrid` / `torch.chunk` / `Tensor.unbind`
or from a file function returning a tuple of tensors get no kind from their binding; the rule now
reads the engine's value of the receiver at the site and takes it when it is a tensor on the host.
Still silent when the engine's tensor is on the accelerator (`.to(device)` copies nothing), when the
value is unknown (an imported helper), when the name changes in the loop, and for names that are
not tensors at all."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
from mylib import make_pair

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
BIND
w = torch.zeros(4, 4, device=device, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(5):
    loss = (MOVE + w).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _lines(bind, move="fx.to(device)", text=TEXT):
    src = text.replace("BIND", bind).replace("MOVE", move)
    return [d.line for d in check(src, {"GL504"}) if d.code == "GL504"]


MESHGRID = 'fy, fx = torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij")'


def test_meshgrid_element_moved_every_step_is_reported():
    assert _lines(MESHGRID) == [9]
    assert _lines(MESHGRID, "fx.float().to(device)") == [9]
    assert _lines(MESHGRID, "fy.cuda()") == [9]


def test_other_tuples_of_host_tensors_are_reported():
    assert _lines("fx, fy = torch.chunk(torch.randn(8, 4), 2)") == [9]
    assert _lines("fx, fy = torch.randn(2, 4, 4).unbind(0)") == [9]
    pair = "def pair():\n    return torch.zeros(4, 4), torch.ones(4, 4)\n\n\nfx, fy = pair()"
    assert _lines(pair) == [13]


def test_message_names_the_unpacked_tensor():
    d = next(d for d in check(TEXT.replace("BIND", MESHGRID).replace("MOVE", "fx.to(device)"), {"GL504"}))
    assert "`fx` does not change in this loop" in d.message


def test_engine_tensor_on_the_accelerator_is_not_reported():
    assert _lines("fx, fy = torch.randn(2, 4, 4, device=device).unbind(0)") == []


def test_unknown_value_is_not_reported():
    assert _lines("fx, fy = make_pair()") == []


def test_unpacked_name_rebound_or_changed_in_the_loop_is_not_reported():
    rebound = TEXT.replace("    opt.step()\n", "    opt.step()\n    fx = fx + 1\n")
    assert _lines(MESHGRID, text=rebound) == []
    in_place = TEXT.replace("    opt.step()\n", "    opt.step()\n    fx.add_(1)\n")
    assert _lines(MESHGRID, text=in_place) == []


def test_non_tensor_unpacked_names_are_not_reported():
    src = "fx, fy = [1.0, 2.0], [3.0, 4.0]"
    assert _lines(src, "torch.tensor(fx).to(device)") == []


def test_hoist_fix_moves_the_statement():
    src = TEXT.replace("BIND", MESHGRID).replace(
        "    loss = (MOVE + w).pow(2).mean()\n",
        "    gx = fx.float().to(device)\n    loss = (gx + w).pow(2).mean()\n")
    out = fix(src, {"GL504"}, unsafe=True).text
    assert "gx = fx.float().to(device)\nfor step in range(5):\n" in out
