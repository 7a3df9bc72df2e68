"""GL115 and a GPU-presence guard: CUDA initialised under `if torch.cuda.device_count() > 0:` (EasyNLP's
`_initialize_distributed`, alibaba/EasyNLP#35, fixtures54) is initialised on every machine where
`CUDA_VISIBLE_DEVICES` matters, so a later assignment comes too late."""

from __future__ import annotations

from fixture_support import check

SRC = """
import os

import torch


def _init_distributed():
    GUARD
        torch.cuda.set_device(0)


def initialize():
    _init_distributed()


def main():
    initialize()
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    return torch.zeros(1)


main()
"""


def lines(guard: str, src: str = SRC) -> list[int]:
    return [d.line for d in check(src.replace("GUARD", guard), {"GL115"}) if d.code == "GL115"]


def test_device_count_greater_than_zero_guard_is_reported():
    assert lines("if torch.cuda.device_count() > 0:") == [18]


def test_device_count_bound_to_a_name_is_reported():
    src = SRC.replace("    GUARD\n", "    n_gpu = torch.cuda.device_count()\n    if n_gpu >= 1:\n")
    assert lines("", src) == [19]


def test_truthy_device_count_is_reported():
    assert lines("if torch.cuda.device_count():") == [18]


def test_guard_in_the_same_function_is_reported():
    src = SRC.replace(
        '    initialize()\n    os.environ', '    if torch.cuda.device_count() != 0:\n        torch.cuda.set_device(0)\n    os.environ'
    )
    assert lines("if False:", src) == [19]


def test_a_user_flag_guard_stays_silent():
    assert lines("if os.environ.get('USE_GPU'):") == []


def test_more_than_one_gpu_guard_stays_silent():
    assert lines("if torch.cuda.device_count() > 1:") == []


def test_the_else_branch_of_a_gpu_test_stays_silent():
    src = SRC.replace("        torch.cuda.set_device(0)\n", "        pass\n    else:\n        torch.cuda.set_device(0)\n")
    assert lines("if torch.cuda.device_count() > 0:", src) == []


def test_a_loop_under_the_guard_stays_silent():
    src = SRC.replace("        torch.cuda.set_device(0)\n", "        for i in range(0):\n            torch.cuda.set_device(i)\n")
    assert lines("if torch.cuda.device_count() > 0:", src) == []
