"""GL110 is silent on a load in the GPU branch of a flag the script computes from
`torch.cuda.device_count()` (MODNet's demo/video_matting/webcam/run.py and custom/run.py:
`GPU = True if torch.cuda.device_count() > 0 else False`, then `if GPU:` loads without
`map_location` after `.cuda()` and the `else:` branch passes `map_location=torch.device('cpu')`).
The branch runs only where CUDA devices exist, like `if torch.cuda.is_available():`. Loads outside
such a branch, or in the branch with no devices, are still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn

model = nn.Linear(4, 2)
GPU = FLAG
if GPU:
    model = model.cuda()
    model.load_state_dict(torch.load("weights.ckpt"))
else:
    model.load_state_dict(torch.load("weights.ckpt", map_location=torch.device("cpu")))
model.eval()
'''


def _lines(text):
    return [f.line for f in check(text, {"GL110"})]


def test_if_expression_of_device_count_is_an_availability_flag():
    assert _lines(TEXT.replace("FLAG", "True if torch.cuda.device_count() > 0 else False")) == []


def test_device_count_comparison_is_an_availability_flag():
    assert _lines(TEXT.replace("FLAG", "torch.cuda.device_count() >= 1")) == []


def test_if_expression_of_is_available_is_an_availability_flag():
    assert _lines(TEXT.replace("FLAG", "True if torch.cuda.is_available() else False")) == []


def test_negated_flag_still_reported():
    # the GPU branch is the one with no devices: the load there is reported
    assert _lines(TEXT.replace("FLAG", "False if torch.cuda.device_count() > 0 else True")) == [8]


def test_unrelated_flag_still_reported():
    assert _lines("import sys\n" + TEXT.replace("FLAG", "True if len(sys.argv) > 1 else False")) == [9]
