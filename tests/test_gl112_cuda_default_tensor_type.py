"""GL112 stays silent when the file sets a default tensor type that may be CUDA: every layer it
builds is created on the GPU, moved or not (PRECISION38: Xingyu-Lin/mbpo_pytorch model.py,
`torch.set_default_tensor_type(torch.cuda.FloatTensor)` at the top, `EnsembleModel` built and never
moved, its inputs moved to `device = torch.device('cuda')`). A written-out CPU type keeps the
finding."""

from __future__ import annotations

from fixture_support import rules_for
from gpulint.engine import Options, run_text

TEMPLATE = '''import torch

torch.set_default_tensor_type({arg})
import numpy as np
import torch.nn as nn

device = torch.device("cuda")


class EnsembleFC(nn.Module):
    def __init__(self, in_features, out_features, ensemble_size):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(ensemble_size, in_features, out_features))
        nn.init.normal_(self.weight, std=0.1)

    def forward(self, x):
        return torch.bmm(x, self.weight)


class EnsembleDynamicsModel:
    def __init__(self):
        self.ensemble_model = EnsembleFC(4, 2, 3)

    def predict(self, inputs):
        x = torch.from_numpy(inputs).float().to(device)
        with torch.no_grad():
            return self.ensemble_model(x[None].repeat([3, 1, 1]))


print(EnsembleDynamicsModel().predict(np.random.randn(5, 4)).sum())
'''


def _gl112(text):
    return [d for d in run_text("t.py", text, rules_for({"GL112"}), Options()).diagnostics if d.code == "GL112"]


def test_cuda_default_tensor_type_is_silent():
    assert _gl112(TEMPLATE.format(arg="torch.cuda.FloatTensor")) == []


def test_cuda_default_tensor_type_string_is_silent():
    assert _gl112(TEMPLATE.format(arg="'torch.cuda.FloatTensor'")) == []


def test_cpu_default_tensor_type_stays_reported():
    assert [d.line for d in _gl112(TEMPLATE.format(arg="torch.DoubleTensor"))] == [27]
