"""GL110's unsafe fix writes `map_location=<the device things are moved to>`. The fixes13 corpus
audit found it writing `map_location=local_rank` (zphang/minimal-llama tinypar: `.to(local_rank)`)
and `map_location=args.gpu` (lukemelas/EfficientNet-PyTorch examples/imagenet/main.py): `.to()` and
`.cuda()` take a device index, but `torch.load` calls any map_location that is not a str, dict or
torch.device, so an int raises `TypeError: 'int' object is not callable`. An index-named expression
is no candidate unless every binding makes it a device (a string or `torch.device(...)`)."""

from __future__ import annotations

import ast
import io

import torch

from fixture_support import fix

INDEX = '''import os
import torch
import torch.nn as nn


def main(path):
    local_rank = int(os.environ["LOCAL_RANK"])
    model = nn.Linear(4, 2).to(local_rank)
    state = torch.load(path)
    x = torch.randn(3, 4).to(local_rank)
    print(model(x), len(state))


if __name__ == "__main__":
    main("ckpt.pt")
'''

DEVICE = INDEX.replace(
    'local_rank = int(os.environ["LOCAL_RANK"])',
    'local_rank = int(os.environ["LOCAL_RANK"])\n    gpu_rank = torch.device("cuda", local_rank)',
).replace(".to(local_rank)", ".to(gpu_rank)")


def test_int_map_location_raises_in_torch():
    buf = io.BytesIO()
    torch.save({"a": torch.zeros(1)}, buf)
    buf.seek(0)
    try:
        torch.load(buf, map_location=0)
    except TypeError:
        pass
    else:  # pragma: no cover - torch changed: revisit the rule
        raise AssertionError("torch.load(map_location=<int>) no longer raises")


def test_no_index_as_map_location():
    out = fix(INDEX, {"GL110"}, unsafe=True).text
    ast.parse(out)
    assert "map_location=local_rank" not in out


def test_a_device_named_like_a_rank_is_still_used():
    out = fix(DEVICE, {"GL110"}, unsafe=True).text
    assert "torch.load(path, map_location=gpu_rank)" in out
