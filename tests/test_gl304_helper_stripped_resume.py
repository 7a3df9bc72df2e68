"""GL304 is silent when the file's own resume path drops the `module.` prefix through a helper
function of the file (batmanlab/HA-GAN train.py: `ckpt = trim_state_dict_name(ckpt)`, then
`G.load_state_dict(ckpt)` before `G = nn.DataParallel(G)` and `torch.save(G.state_dict(), ...)`;
the helper fills an OrderedDict with `name = k[7:]`, "remove `module.`"): the `module.` keys are the
checkpoint format the file reads back, as when the stripping is written inline. A helper that
copies the keys unchanged, or no resume path at all, is still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn
from collections import OrderedDict


def trim_state_dict_name(ckpt):
    HELPER


def main(continue_step):
    G = nn.Linear(4, 2)
    if continue_step != 0:
        ckpt = torch.load("G.pth", map_location="cpu")
        ckpt = trim_state_dict_name(ckpt)
        G.load_state_dict(ckpt)
    G = nn.DataParallel(G)
    opt = torch.optim.SGD(G.parameters(), lr=0.1)
    for _ in range(2):
        loss = G(torch.randn(3, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(G.state_dict(), "G.pth")


main(0)
'''

LOOP_SLICE = '''new_state_dict = OrderedDict()
    for k, v in ckpt.items():
        name = k[7:]  # remove `module.`
        new_state_dict[name] = v
    return new_state_dict'''

COMPREHENSION = 'return {k.replace("module.", ""): v for k, v in ckpt.items()}'

COPY = '''new_state_dict = OrderedDict()
    for k, v in ckpt.items():
        new_state_dict[k] = v
    return new_state_dict'''


def _save_line(text):
    return next(i for i, line in enumerate(text.splitlines(), 1) if "torch.save" in line)


def _lines(helper):
    return [f.line for f in check(TEXT.replace("HELPER", helper), {"GL304"})]


def test_helper_filling_a_dict_with_sliced_keys_is_the_checkpoint_format():
    assert _lines(LOOP_SLICE) == []


def test_helper_returning_a_stripping_comprehension_is_the_checkpoint_format():
    assert _lines(COMPREHENSION) == []


def test_helper_copying_the_keys_unchanged_is_still_reported():
    assert _lines(COPY) == [_save_line(TEXT.replace("HELPER", COPY))]


def test_no_resume_path_is_still_reported():
    text = TEXT.replace("HELPER", LOOP_SLICE).replace("        G.load_state_dict(ckpt)\n", "        print(len(ckpt))\n")
    assert [f.line for f in check(text, {"GL304"})] == [_save_line(text)]
