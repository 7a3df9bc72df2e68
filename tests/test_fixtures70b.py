"""fixtures70b (thirty-fourth session): rule-side gap items found while rebuilding real bug
reports for GL2..GL6 (see the README section "fixtures70b (thirty-fourth session)" in
tests/fixtures_pending/README.md)."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix


def _diags(src: str, code: str):
    return [d for d in check(textwrap.dedent(src), {code}) if d.code == code]


def _fixed(src: str, codes: set[str], unsafe: bool = True) -> str:
    return fix(textwrap.dedent(src), codes, unsafe).text


# ------------------------------------------------------------------------------------- B70-G1
# GL304: `torch.save(W.cpu().state_dict(), ...)` of a DataParallel wrapper (EnlightenGAN's
# `save_network`, VITA-Group/EnlightenGAN#30): Module.cpu() returns the wrapper itself.

CPU_THEN_STATE_DICT = """
import torch
import torch.nn as nn

net = nn.Linear(4, 2).cuda()
net = torch.nn.DataParallel(net, [0])
torch.save(net.cpu().state_dict(), "g.pth")
"""


def test_gl304_state_dict_of_moved_wrapper():
    diags = _diags(CPU_THEN_STATE_DICT, "GL304")
    assert [d.line for d in diags] == [7]
    fixed = _fixed(CPU_THEN_STATE_DICT, {"GL304"})
    assert 'torch.save(getattr(net, "module", net).cpu().state_dict(), "g.pth")' in fixed


HELPER_TO_EVAL = """
import torch
import torch.nn as nn


def define_G(gpu_ids):
    net = nn.Linear(4, 2)
    if len(gpu_ids) > 0:
        net.cuda(device=gpu_ids[0])
        net = torch.nn.DataParallel(net, gpu_ids)
    return net


netG = define_G([0])
torch.save(netG.to("cpu").eval().state_dict(), "g.pth")
"""


def test_gl304_state_dict_of_chained_moves_of_helper_wrapper():
    assert [d.line for d in _diags(HELPER_TO_EVAL, "GL304")] == [15]


CPU_UNWRAPPED = """
import torch
import torch.nn as nn

net = nn.Linear(4, 2).cuda()
wrapped = torch.nn.DataParallel(net, [0])
torch.save(net.cpu().state_dict(), "g.pth")
torch.save(wrapped.module.cpu().state_dict(), "h.pth")
"""


def test_gl304_state_dict_of_moved_inner_model_is_silent():
    assert _diags(CPU_UNWRAPPED, "GL304") == []


# ------------------------------------------------------------------------------------- B70-G2
# GL402: a loss read back from a dict of losses (`history.append(losses["ce"])`), the shape of
# MMF's per-loss meter updates (facebookresearch/mmf PR #560).

DICT_ENTRY = """
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(100):
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    losses = {"ce": F.cross_entropy(model(x), y)}
    loss = sum(losses.values())
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(losses["ce"])
"""


def test_gl402_loss_from_dict_of_losses():
    diags = _diags(DICT_ENTRY, "GL402")
    assert [d.line for d in diags] == [16]
    fixed = _fixed(DICT_ENTRY, {"GL402"}, unsafe=False)
    assert 'history.append(losses["ce"].item())' in fixed


def test_gl402_dict_entry_item_or_detached_is_silent():
    item = DICT_ENTRY.replace('history.append(losses["ce"])', 'history.append(losses["ce"].item())')
    assert _diags(item, "GL402") == []
    detached = DICT_ENTRY.replace('losses = {"ce": F.cross_entropy(model(x), y)}',
                                  'losses = {"ce": F.cross_entropy(model(x), y)}\n    logged = {k: v.detach() for k, v in losses.items()}')
    detached = detached.replace('history.append(losses["ce"])', 'history.append(logged["ce"])')
    assert _diags(detached, "GL402") == []
