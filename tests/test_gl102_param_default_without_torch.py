"""GL102 on a parameter default `'cuda'` in a file that never imports torch
(mit-han-lab/temporal-shift-module tsm_fpga/main_tf.py:97, `def run(target='cuda', ...)`, a TVM
compilation target in a TensorFlow/TVM script): the string is not a torch device, so the file has no
hard-coded placement. A device-named parameter (`device='cuda'`) is still reported there, and any
parameter default `'cuda'` is still reported in a file that imports torch."""

from __future__ import annotations

from fixture_support import check

TVM = '''import argparse

import numpy as np
import tvm
from tvm import relay


def run(PARAM, print_log=True):
    ctx = tvm.context(NAME, 0)
    graph = relay.build(build_module(), target=NAME)
    return graph, ctx


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default=DEFAULT)
    args = parser.parse_args()
    run(args.target)
'''


def _lines(text):
    return [f.line for f in check(text, {"GL102"})]


def _tvm(param="target='cuda'", name="target", default="'llvm'", head=""):
    return head + TVM.replace("PARAM", param).replace("NAME", name).replace("DEFAULT", default)


def test_compiler_target_default_in_a_file_without_torch_is_silent():
    assert _lines(_tvm()) == []


def test_device_named_parameter_without_torch_is_reported():
    assert _lines(_tvm(param="device='cuda'", name="device")) == [8]


def test_target_default_in_a_torch_file_is_reported():
    assert _lines(_tvm(head="import torch\n")) == [9]
