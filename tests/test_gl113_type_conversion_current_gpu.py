"""GL113 and conversions to a CUDA tensor type (MONAI GenerativeModels#371, G60-1): a host tensor
converted with `.type(x.type())` (x on a GPU, so `"torch.cuda.FloatTensor"`) or
`.type(torch.cuda.FloatTensor)` lands on the *current* GPU, as an index-less `.cuda()` does; and
both are reported in a method of the module that only `forward` reaches (`self.get_target(...)`),
not only in `forward` itself or in a module-level helper."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class AdvLoss(nn.Module):
    def get_target(self, input):
        return TARGET.expand_as(input)

    def forward(self, input):
        return F.mse_loss(input, self.get_target(input))
EXTRA
"""


def lines(target: str, extra: str = "") -> list[int]:
    src = SRC.replace("TARGET", target).replace("EXTRA", extra)
    return [d.line for d in check(src, {"GL113"}) if d.code == "GL113"]


def test_host_tensor_typed_like_the_input_in_a_forward_method_is_reported():
    found = [
        d
        for d in check(SRC.replace("TARGET", "torch.tensor(1.0).type(input.type())").replace("EXTRA", ""), {"GL113"})
        if d.code == "GL113"
    ]
    assert [d.line for d in found] == [9]
    assert "`.type(input.type())` in `get_target` (called only from `forward`)" in found[0].message


def test_cuda_tensor_type_attribute_and_string_are_reported():
    assert lines("torch.tensor(1.0).type(torch.cuda.FloatTensor)") == [9]
    assert lines('torch.tensor(1.0).type("torch.cuda.FloatTensor")') == [9]


def test_indexless_cuda_in_a_method_only_forward_calls_is_reported():
    assert lines("torch.tensor(1.0).cuda()") == [9]


def test_conversion_moved_to_the_input_device_afterwards_stays_silent():
    # the PR's fix: `.type(input.type()).to(input[0].device)`
    assert lines("torch.tensor(1.0).type(input.type()).to(input[0].device)") == []


def test_tensor_already_on_the_input_device_keeps_its_index():
    # `.type()` of a tensor on cuda:1 stays on cuda:1: only a host tensor picks the current GPU
    assert lines("(input > 0).type(input.type())") == []


def test_dtype_conversions_and_reading_the_type_stay_silent():
    assert lines("torch.tensor(1.0).type(torch.float32)") == []
    assert lines("torch.tensor(1.0).type(torch.FloatTensor)") == []


def test_method_also_called_from_outside_forward_stays_silent():
    extra = "\n\nt = AdvLoss().get_target(torch.zeros(2))\n"
    assert lines("torch.tensor(1.0).type(input.type())", extra) == []
    assert lines("torch.tensor(1.0).cuda()", extra) == []


def test_file_that_sets_the_current_gpu_stays_silent_for_type():
    extra = "\n\ntorch.cuda.set_device(1)\n"
    assert lines("torch.tensor(1.0).type(input.type())", extra) == []


def test_same_method_name_in_another_class_does_not_hide_it():
    extra = '''

class Other(nn.Module):
    def get_target(self, input):
        return input

    def forward(self, input):
        return self.get_target(input)
'''
    assert lines("torch.tensor(1.0).type(input.type())", extra) == [9]
