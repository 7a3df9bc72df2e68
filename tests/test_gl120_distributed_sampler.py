"""GL120 and DistributedSampler: a shuffling DistributedSampler seeds its own CPU `torch.Generator()`
in every `__iter__` (it takes no `generator=`), so a CUDA default device breaks it the way it breaks
a shuffling DataLoader (pytorch/pytorch#61457, fixtures54)."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

torch.set_default_device("cuda")
ds = TensorDataset(torch.randn(16, 4), torch.randn(16))
sampler = DistributedSampler(ds, num_replicas=1, rank=0SHUFFLE)
loader = DataLoader(ds, batch_size=4, sampler=sampler)
for x, y in loader:
    print(x.sum())
"""


def findings(shuffle: str, src: str = SRC):
    return [d for d in check(src.replace("SHUFFLE", shuffle), {"GL120"}) if d.code == "GL120"]


def test_default_shuffle_is_reported_at_the_setter():
    found = findings("")
    assert [d.line for d in found] == [6]
    assert "DistributedSampler at line 8" in found[0].message
    assert "takes no `generator=`" in found[0].message


def test_shuffle_true_keyword_and_positional_are_reported():
    assert [d.line for d in findings(", shuffle=True")] == [6]
    src = SRC.replace("num_replicas=1, rank=0SHUFFLE", "1, 0, True")
    assert [d.line for d in findings("", src)] == [6]


def test_qualified_name_through_torch_utils_data():
    src = SRC.replace(
        "from torch.utils.data.distributed import DistributedSampler\n", ""
    ).replace("DistributedSampler(", "torch.utils.data.DistributedSampler(")
    assert [d.line for d in findings("", src)] == [5]  # one import line fewer


def test_no_shuffle_is_silent():
    assert findings(", shuffle=False") == []


def test_shuffle_from_a_variable_is_silent():
    assert findings(", shuffle=args_shuffle") == []


def test_without_a_cuda_default_device_is_silent():
    src = SRC.replace('torch.set_default_device("cuda")', 'torch.set_default_device("cpu")')
    assert findings("", src) == []


def test_a_device_context_around_the_model_only_is_silent():
    src = SRC.replace('torch.set_default_device("cuda")\n', "").replace(
        "for x, y in loader:", 'with torch.device("cuda"):\n    net = torch.nn.Linear(4, 1)\nfor x, y in loader:'
    )
    assert findings("", src) == []
