"""GL109 stays silent on `np.shape(t)` / `np.ndim(t)` of a device tensor: NumPy reads `t.shape` /
`t.ndim` first and converts only objects without the attribute, so nothing is copied and nothing
fails (PRECISION38: JordanAsh/badge query_strategies/baseline_sampling_det.py `gram_red`,
`n = np.shape(L_inv)[0]` of a CUDA pseudo-inverse). `np.sum(t)` of the same tensor stays reported."""

from __future__ import annotations

from fixture_support import rules_for
from gpulint.engine import Options, run_text

SHAPE = '''import numpy as np
import torch

Phi = torch.randn(6, 4).cuda()
n = np.shape(Phi)[0]
print(n)
'''

NDIM = '''import numpy as np
import torch

Phi = torch.randn(6, 4).cuda()
d = np.ndim(Phi)
print(d)
'''

SUM = '''import numpy as np
import torch

Phi = torch.randn(6, 4).cuda()
s = np.sum(Phi)
print(s)
'''


def _gl109(text):
    return [d for d in run_text("t.py", text, rules_for({"GL109"}), Options()).diagnostics if d.code == "GL109"]


def test_np_shape_of_device_tensor_is_silent():
    assert _gl109(SHAPE) == []


def test_np_ndim_of_device_tensor_is_silent():
    assert _gl109(NDIM) == []


def test_np_sum_of_device_tensor_stays_reported():
    assert [d.line for d in _gl109(SUM)] == [5]
