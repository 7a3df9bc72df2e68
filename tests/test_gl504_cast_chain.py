"""GL504 and a dtype cast between the invariant tensor and its move (fixtures55, G55-3;
pytorch/pytorch#17854: a flow-warping grid built once with `torch.meshgrid`, then
`torch.add(fx.float().cuda(), flow[0])` on every step). `fx.float().to(device)` copies `fx` to the
device on every iteration exactly as `fx.to(device)` does; the rule now looks through no-argument
casts (`.float()`, `.long()`, ...) and `.to(<dtype>)` to the name under them. Still silent when the
chain holds anything but casts, when the outer `.to` names only a dtype, when the name is rebound
or changed in place in the loop, and when it is not known to be a tensor."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
h, w = 8, 8
fx = torch.arange(0, w).repeat(h, 1)
fy = torch.arange(0, h).repeat(w, 1).t()
flow = torch.zeros(2, h, w, device=device, requires_grad=True)
opt = torch.optim.SGD([flow], lr=0.1)
for step in range(10):
    new_fx = torch.add(MOVE_X, flow[0])
    new_fy = torch.add(fy.float().to(device), flow[1])
    loss = (new_fx - 3).pow(2).mean() + (new_fy - 2).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _lines(text):
    return sorted(d.line for d in check(text, {"GL504"}) if d.code == "GL504")


def test_cast_then_move_of_an_invariant_tensor_is_reported():
    assert _lines(TEXT.replace("MOVE_X", "fx.float().to(device)")) == [10, 11]


def test_cast_then_cuda_and_dtype_to_then_move_are_reported():
    assert _lines(TEXT.replace("MOVE_X", "fx.long().double().cuda()")) == [10, 11]
    assert _lines(TEXT.replace("MOVE_X", "fx.to(torch.float32).to(device)")) == [10, 11]


def test_message_names_the_tensor_and_the_whole_call():
    d = next(d for d in check(TEXT.replace("MOVE_X", "fx.float().to(device)"), {"GL504"}) if d.code == "GL504")
    assert "`fx` does not change in this loop" in d.message
    assert "`fx.float().to(device)`" in d.message


def test_non_cast_in_the_chain_is_not_followed():
    assert 10 not in _lines(TEXT.replace("MOVE_X", "fx.add(1).to(device)"))
    assert 10 not in _lines(TEXT.replace("MOVE_X", "fx[0].float().to(device)"))


def test_cast_to_a_dtype_only_is_no_transfer():
    assert 10 not in _lines(TEXT.replace("MOVE_X", "fx.float().to(torch.float16)"))


def test_name_rebound_or_changed_in_the_loop_is_not_reported():
    rebound = TEXT.replace("MOVE_X", "fx.float().to(device)").replace(
        "    opt.step()\n", "    opt.step()\n    fx = fx + 1\n")
    assert 10 not in _lines(rebound)
    in_place = TEXT.replace("MOVE_X", "fx.float().to(device)").replace(
        "    opt.step()\n", "    opt.step()\n    fx.add_(1)\n")
    assert 10 not in _lines(in_place)


def test_unknown_value_is_not_reported():
    src = TEXT.replace("MOVE_X", "fx.float().to(device)").replace(
        "fx = torch.arange(0, w).repeat(h, 1)", "fx = make_grid(h, w)")
    assert 10 not in _lines(src)


def test_hoist_fix_moves_a_whole_cast_and_move_statement():
    src = TEXT.replace("    new_fx = torch.add(MOVE_X, flow[0])\n",
                       "    grid_x = fx.float().to(device)\n    new_fx = torch.add(grid_x, flow[0])\n")
    out = fix(src, {"GL504"}, unsafe=True).text
    assert "grid_x = fx.float().to(device)\nfor step in range(10):\n" in out
