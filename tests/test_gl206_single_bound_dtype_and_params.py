"""GL206: the float16 cast and the optimizer's parameters reached through a name assigned once
(magic_animate_unofficial#6's `weight_type = torch.float16; model.to(local_rank, dtype=weight_type)`
with `optimizer = AdamW(trainable_params, ...)` where `trainable_params = list(filter(lambda p:
p.requires_grad, model.parameters()))`). A dtype name bound on several paths (diffusers'
`weight_dtype`) and a cast model no optimizer receives stay silent. fixtures25."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.body(x))


def main(fp16=True):
    device = torch.device("cuda")
    model = Net()
    frozen = Net()
'''

LOOP = '''    for step in range(10):
        x = torch.randn(8, 4, device=device, dtype=torch.float16)
        loss = F.mse_loss(model(x).float(), torch.zeros(8, 1, device=device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
'''

DTYPE_NAME = HEAD + '''    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    weight_type = torch.float16
    model.to(device, dtype=weight_type)
''' + LOOP

FILTERED_PARAMS = HEAD + '''    trainable_params = list(filter(lambda p: p.requires_grad, model.parameters()))
    optimizer = torch.optim.AdamW(trainable_params, lr=1e-3)
    model.half()
''' + LOOP

DTYPE_SEVERAL_PATHS = HEAD + '''    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    weight_dtype = torch.float32
    if fp16:
        weight_dtype = torch.float16
    model.to(device, dtype=weight_dtype)
''' + LOOP

FROZEN_CAST = HEAD + '''    trainable_params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable_params, lr=1e-3)
    weight_type = torch.float16
    frozen.to(device, dtype=weight_type)
    model.to(device)
''' + LOOP


def _lines(text):
    return [d.line for d in check(text, {"GL206"}) if d.code == "GL206"]


def test_dtype_name_assigned_once_is_float16():
    assert _lines(DTYPE_NAME) == [22]


def test_optimizer_over_a_filtered_parameter_list_of_the_model():
    assert _lines(FILTERED_PARAMS) == [22]


def test_dtype_name_bound_on_several_paths_stays_silent():
    assert _lines(DTYPE_SEVERAL_PATHS) == []


def test_cast_of_a_model_no_optimizer_receives_stays_silent():
    assert _lines(FROZEN_CAST) == []
