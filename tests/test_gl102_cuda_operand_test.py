"""GL102 on a `.cuda()` that runs only when a tensor is already on CUDA (PRECISION24 #3,
Eric-mingjie/rethinking-network-pruning cifar/l1-norm-pruning/models/resnet.py and
cifar/lottery-ticket/l1-norm-pruning/models/resnet.py: the CIFAR ResNet's shortcut builds
`zero_pads` on the host and moves it with `if isinstance(x.data, torch.cuda.FloatTensor):
zero_pads = zero_pads.cuda()`). That branch cannot run on a machine without a GPU: it follows the
data. `x.device.type == "cuda"` is the same test (`x.is_cuda` was already silent: a CUDA flag of the file). The `else` branch, a negated
test, and a test on a dtype name that is not an `isinstance` check are still reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


def downsample_basic_block(x, planes):
    x = nn.AvgPool2d(2, 2)(x)
    zero_pads = torch.zeros(x.size(0), planes - x.size(1), x.size(2), x.size(3))
    if TEST:
        zero_pads = zero_pads.cuda()
    return torch.cat([x, zero_pads], dim=1)


class Shortcut(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.planes = planes
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return downsample_basic_block(self.conv(x), self.planes)


if __name__ == "__main__":
    net = Shortcut(8)
    print(net(torch.randn(2, 3, 8, 8)).shape)
'''

ELSE = '''import torch
import torch.nn as nn


def downsample_basic_block(x, planes):
    x = nn.AvgPool2d(2, 2)(x)
    zero_pads = torch.zeros(x.size(0), planes - x.size(1), x.size(2), x.size(3))
    if isinstance(x.data, torch.cuda.FloatTensor):
        pass
    else:
        zero_pads = zero_pads.cuda()
    return torch.cat([x, zero_pads], dim=1)


class Shortcut(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.planes = planes
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return downsample_basic_block(self.conv(x), self.planes)


if __name__ == "__main__":
    net = Shortcut(8)
    print(net(torch.randn(2, 3, 8, 8)).shape)
'''


def _lines(test):
    return [f.line for f in check(TEXT.replace("TEST", test), {"GL102"}) if f.code == "GL102"]


def test_isinstance_of_a_cuda_tensor_type():
    assert _lines("isinstance(x.data, torch.cuda.FloatTensor)") == []


def test_is_cuda_attribute():
    assert _lines("x.is_cuda") == []


def test_device_type_is_cuda():
    assert _lines('x.device.type == "cuda"') == []


def test_negated_test_is_still_reported():
    assert _lines("not isinstance(x.data, torch.cuda.FloatTensor)") == [9]


def test_device_type_not_cuda_is_still_reported():
    assert _lines('x.device.type != "cuda"') == [9]


def test_dtype_name_comparison_is_still_reported():
    assert _lines("x.type() == torch.cuda.FloatTensor") == [9]


def test_else_branch_is_still_reported():
    assert [f.line for f in check(ELSE, {"GL102"}) if f.code == "GL102"] == [11]
