"""GL106 reports a plain tensor attribute pinned to one GPU in `__init__` (`.cuda()`,
`.to("cuda")`) of a class the file wraps in `nn.DataParallel` (G58-7,
seyonechithrananda/bert-loves-chemistry#15): replicas read the cuda:0 copy. Without DataParallel,
under DDP (each rank sets its device), or with the attribute moved at the read, it stays silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.norm_mean = torch.tensor([1.0, 2.0])MOVE

    def forward(self, x, labels):
        return nn.functional.mse_loss(self.lin(x), labels - READ)


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x, labels):
        return self.head(x, labels)


WRAP
x, y = torch.randn(8, 4).cuda(), torch.randn(8, 2).cuda()
loss = model(x, y).mean()
'''


def _lines(move=".cuda()", read="self.norm_mean", wrap="model = nn.DataParallel(Reg().cuda())"):
    text = TEXT.replace("MOVE", move).replace("READ", read).replace("WRAP", wrap)
    return [f.line for f in check(text, {"GL106"})]


def test_cuda_attribute_of_a_submodule_under_data_parallel_is_reported():
    assert _lines() == [9]


def test_to_cuda_string_through_a_name_is_reported():
    assert _lines(move='.to("cuda")', wrap="model = Reg().cuda()\nmodel = nn.DataParallel(model)") == [9]


def test_without_data_parallel_is_silent():
    assert _lines(wrap="model = Reg().cuda()") == []


def test_ddp_is_silent():
    assert _lines(wrap="model = nn.parallel.DistributedDataParallel(Reg().cuda())") == []


def test_moved_at_the_read_is_silent():
    assert _lines(read="self.norm_mean.to(labels.device)") == []


def test_moved_to_a_device_variable_is_silent():
    assert _lines(move=".to(torch.device('cuda', 0) if False else 'cpu')") == []
