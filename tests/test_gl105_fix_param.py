"""GL105's safe fix names a parameter of the method as the tensor whose device the factory takes:
only one the flow engine knows is a tensor (precision10: yolov4-pytorch's `device=l.device` with `l`
a layer index, PyTorch_YOLOv4's `device=dtype.device` with a type string: applying either raised).

The factory's result is used whole (`input * anchors`): a full reduction such as `anchors.sum()` is
a 0-dim CPU tensor, which PyTorch combines with a CUDA tensor, so it would be no finding."""

from __future__ import annotations

from fixture_support import check, fix

SRC = """
import torch
import torch.nn as nn


class YOLOLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, l, input, targets=None):
        mask = self.get_target(l, input)
        return (input * mask * self.scale).sum()

    def get_target(self, l, input):
        anchors = torch.FloatTensor([1.0, 2.0])
        return input * anchors * l
"""


def test_no_fix_names_a_parameter_not_known_to_be_a_tensor():
    assert [d.code for d in check(SRC, ["GL105"])] == ["GL105"]
    out = fix(SRC, ["GL105"], unsafe=True).text
    assert "l.device" not in out

