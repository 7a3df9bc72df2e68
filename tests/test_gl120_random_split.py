"""GL120 counts `random_split` without a generator (or with a CPU one, or
`torch.default_generator`) as a consumer of the CPU generator (G57-1,
hcnoh/knowledge-tracing-collection-pytorch#1): under a CUDA default it raises when called. A split
with a generator on the default device, or one made before the default changes, stays silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
from torch.utils.data import DataLoader, TensorDataset, random_split
BEFORE
torch.set_default_tensor_type(torch.cuda.FloatTensor)
ds = TensorDataset(torch.randn(10, 2))
AFTER
for (x,) in DataLoader(train, batch_size=4):
    pass
'''


def _lines(before="", after="train, test = random_split(ds, [8, 2])"):
    text = TEXT.replace("BEFORE", before).replace("AFTER", after)
    return [f.line for f in check(text, {"GL120"})]


def test_split_without_generator_is_reported():
    assert _lines() == [4]


def test_split_with_the_default_generator_is_reported():
    assert _lines(after="train, test = random_split(ds, [8, 2], generator=torch.default_generator)") == [4]


def test_split_with_a_cuda_generator_is_silent():
    assert _lines(after='train, test = random_split(ds, [8, 2], generator=torch.Generator(device="cuda"))') == []


def test_split_before_the_default_changes_is_silent():
    assert _lines(before="train, test = random_split(TensorDataset(torch.randn(10, 2)), [8, 2])", after="") == []


def test_split_in_a_function_before_the_setter_is_silent():
    text = '''import torch
from torch.utils.data import DataLoader, TensorDataset, random_split


def main():
    train, test = random_split(TensorDataset(torch.randn(10, 2)), [8, 2])
    torch.set_default_device("cuda")
    for (x,) in DataLoader(train, batch_size=4):
        pass
'''
    assert [f.line for f in check(text, {"GL120"})] == []
