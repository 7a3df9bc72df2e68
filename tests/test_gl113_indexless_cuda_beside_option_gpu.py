"""GL113 reports an index-less `.cuda()` in a file whose other moves go to a GPU chosen by an
option (`torch.device("cuda:%d" % opt.gpu)`, f-string, `.format`, `torch.device("cuda", rank)`),
G58-3, shunsukesaito/SCANimate#8. Silent when the file makes that GPU the current one
(`torch.cuda.set_device`, `with torch.cuda.device(...)`, `CUDA_VISIBLE_DEVICES`), for devices built
in a loop over GPUs, and without such a device."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
opt = parser.parse_args()
EXTRA
cuda = DEVICE
a = torch.randn(2, 3).to(device=cuda)
b = torch.randn(2, 3).cuda()
c = a + b
'''


def _lines(device='torch.device("cuda:%d" % opt.gpu)', extra=""):
    text = TEXT.replace("DEVICE", device).replace("EXTRA", extra)
    return [f.line for f in check(text, {"GL113"})]


def test_percent_formatted_option_index_is_reported():
    assert _lines() == [12]


def test_fstring_option_index_is_reported():
    assert _lines(device='torch.device(f"cuda:{opt.gpu}")') == [12]


def test_two_argument_device_with_a_variable_is_reported():
    assert _lines(device='torch.device("cuda", gpu)', extra="gpu = opt.gpu") == [12]


def test_set_device_is_silent():
    assert _lines(extra="torch.cuda.set_device(opt.gpu)") == []


def test_cuda_visible_devices_is_silent():
    assert _lines(extra='os.environ["CUDA_VISIBLE_DEVICES"] = str(opt.gpu)') == []


def test_devices_of_a_loop_over_gpus_are_silent():
    assert _lines(device='[torch.device(f"cuda:{i}") for i in range(2)][0]') == []


def test_plain_cuda_device_is_silent():
    assert _lines(device='torch.device("cuda")') == []
