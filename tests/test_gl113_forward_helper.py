"""GL113 and the current GPU reached from `forward`: an index-less `torch.device("cuda")` in
`forward`, or an index-less `torch.device("cuda")` / `.cuda()` in a module-level helper that only
`forward` calls (DrugOOD's `move_to_device`, tencent-ailab/DrugOOD#6, fixtures54), moves the input
to the current GPU instead of the module's."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


def to_dev(x, device=None):
    if device is None:
        device = torch.device("cuda")
    if isinstance(x, list):
        return [to_dev(v, device) for v in x]
    return x.to(device)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(to_dev(x))
EXTRA
"""


def lines(src: str = SRC, extra: str = "") -> list[int]:
    return [d.line for d in check(src.replace("EXTRA", extra), {"GL113"}) if d.code == "GL113"]


def test_helper_called_only_from_forward_is_reported():
    found = [d for d in check(SRC.replace("EXTRA", ""), {"GL113"}) if d.code == "GL113"]
    assert [d.line for d in found] == [8]
    assert "`to_dev` (called only from `forward`)" in found[0].message


def test_indexless_device_directly_in_forward_is_reported():
    src = SRC.replace("return self.lin(to_dev(x))", 'return self.lin(x.to(torch.device("cuda")))')
    assert lines(src) == [20]


def test_cuda_call_in_a_helper_called_only_from_forward_is_reported():
    src = SRC.replace("    return x.to(device)\n", "    return x.cuda()\n").replace(
        '    if device is None:\n        device = torch.device("cuda")\n', ""
    )
    assert lines(src) == [9]


def test_helper_also_called_outside_forward_stays_silent():
    assert lines(extra="\n\nbatch = to_dev(torch.zeros(2, 4))\n") == []


def test_indexless_device_at_module_level_stays_silent():
    src = SRC.replace('        device = torch.device("cuda")\n', "        device = DEVICE\n")
    assert lines(src, extra='\n\nDEVICE = torch.device("cuda")\n') == []


def test_device_chosen_at_run_time_in_forward_stays_silent():
    src = SRC.replace(
        "return self.lin(to_dev(x))",
        'return self.lin(x.to(torch.device("cuda" if torch.cuda.is_available() else "cpu")))',
    )
    assert lines(src) == []


def test_helper_taking_the_device_from_forward_stays_silent():
    src = SRC.replace('        device = torch.device("cuda")\n', "        device = torch.device(\"cpu\")\n").replace(
        "to_dev(x))", "to_dev(x, self.lin.weight.device))"
    )
    assert lines(src) == []


def test_indexless_and_indexed_devices_in_one_file_do_not_break_the_rule():
    # a `torch.device("cuda")` outside forward followed by `torch.device("cuda", 0)`: the local
    # name that held the message place must not shadow the rule's `where` helper (fixtures54's
    # GL000 on tests/fixtures/GL102/ok_cuda_device_in_a_comparison.py)
    src = (
        "import torch\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "a = torch.device('cuda')\n"
        "b = torch.device('cuda', 0)\n"
    )
    found = [d for d in check(src, {"GL113"}) if d.code in ("GL113", "GL000")]
    assert [(d.code, d.line) for d in found] == [("GL113", 5)]
