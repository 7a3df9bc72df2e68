# Source shape: https://github.com/Westlake-AI/openmixup/blob/main/tests/test_runtime/test_optimizer.py (assert_equal, _test_state_dict; "Copied from PyTorch")
# Pending hard negative (PRECISION44, P44-4): `assert_equal(x, y)` dispatches on the types of its
# arguments: two tensors are compared with `y.to(x.device)` in the first branch; `x == y` runs only
# in the `str` branch and in the final `else` (neither is reached with two tensors). The optimizer
# test compares the host weights with their CUDA copy. GL116 reports both `x == y` today: the
# flow engine joins the tensor arguments of every call site into every branch of the `isinstance`
# chain (no narrowing by `isinstance`).
import json
from collections import OrderedDict
from typing import Iterable

import torch

torch.manual_seed(0)


def assert_equal(x, y):
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
        torch.testing.assert_close(x, y.to(x.device))
    elif isinstance(x, OrderedDict) and isinstance(y, OrderedDict):
        for x_value, y_value in zip(x.values(), y.values()):
            assert_equal(x_value, y_value)
    elif isinstance(x, dict) and isinstance(y, dict):
        assert x.keys() == y.keys()
        for key in x.keys():
            assert_equal(x[key], y[key])
    elif isinstance(x, str) and isinstance(y, str):
        assert x == y
    elif isinstance(x, Iterable) and isinstance(y, Iterable):
        assert len(x) == len(y)
        for x_item, y_item in zip(x, y):
            assert_equal(x_item, y_item)
    else:
        assert x == y


weight = torch.randn(1, 4, requires_grad=True)
bias = torch.zeros(1, requires_grad=True)
inputs = torch.randn(16, 4)
targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
optimizer = torch.optim.SGD([weight, bias], lr=0.05)

losses = []
for step in range(30):
    optimizer.zero_grad()
    loss = ((inputs @ weight.t() + bias - targets) ** 2).mean()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

assert_equal(optimizer.state_dict()["param_groups"], optimizer.state_dict()["param_groups"])
assert_equal("sgd", "sgd")
if torch.cuda.is_available():
    # load the state into an optimizer over CUDA copies and compare the parameters
    weight_cuda = weight.detach().cuda().requires_grad_()
    bias_cuda = bias.detach().cuda().requires_grad_()
    assert_equal(weight, weight_cuda)
    assert_equal(bias, bias_cuda)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
