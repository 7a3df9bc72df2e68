"""GL110: a load in the branch of `if device == 'cuda':` whose other branch passes `map_location`
(Rudrabha/Wav2Lip inference.py `_load`: `device = 'cuda' if torch.cuda.is_available() else 'cpu'`,
then `if device == 'cuda': checkpoint = torch.load(path) else: checkpoint = torch.load(path,
map_location=lambda storage, loc: storage)`). The first load runs only where the script put itself
on the GPU: the CUDA devices are there. The same load under a test that says nothing about the
device, or in the CPU branch, keeps the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
from models import Wav2Lip

device = 'cuda' if torch.cuda.is_available() else 'cpu'


def _load(checkpoint_path):
    if {test}:
        checkpoint = torch.load(checkpoint_path)
    else:
        checkpoint = torch.load(checkpoint_path, map_location=lambda storage, loc: storage)
    return checkpoint


def load_model(path):
    model = Wav2Lip()
    checkpoint = _load(path)
    model.load_state_dict(checkpoint["state_dict"])
    return model.to(device).eval()


if __name__ == "__main__":
    model = load_model("wav2lip_gan.pth")
"""


def _lines(test: str):
    src = textwrap.dedent(SRC).format(test=test)
    return [d.line for d in check(src, ["GL110"]) if d.code == "GL110"]


def test_load_under_device_equals_cuda_is_not_reported():
    assert _lines("device == 'cuda'") == []


def test_load_under_device_type_and_str_forms_is_not_reported():
    assert _lines("torch.device(device).type == 'cuda'") == []
    assert _lines("str(device) == 'cuda:0'") == []
    assert _lines("'cpu' != device") == []


def test_load_under_device_equals_cpu_is_reported():
    # the load without map_location is the CPU branch here
    assert _lines("device == 'cpu'") == [10]


def test_load_under_unrelated_test_is_reported():
    assert _lines("checkpoint_path.endswith('.pth')") == [10]
