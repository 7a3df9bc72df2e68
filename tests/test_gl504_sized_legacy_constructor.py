"""GL504 is silent on a legacy typed constructor given sizes and moved in a loop (P48-1, the
tensorboardX GPU-memory demo vendored in openai/jukebox: `x.append(torch.Tensor(1000,
1000).cuda())` on every iteration). The integers are a shape and the memory is uninitialised, as
`torch.empty`: nothing is read from the host, and a buffer the iteration keeps or fills cannot be
built once. Constructors given data (`torch.Tensor([5])`, `torch.tensor(5)`,
`torch.FloatTensor([[0.1, 0.2]])`) stay reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
kept = []
for step in range(10):
    kept.append(EXPR.to(device))
'''


def _lines(expr):
    return [f.line for f in check(TEXT.replace("EXPR", expr), {"GL504"})]


def test_two_sizes_are_a_buffer():
    assert _lines("torch.Tensor(1000, 1000)") == []


def test_one_size_is_a_buffer():
    assert _lines("torch.FloatTensor(8)") == []


def test_sizes_under_a_cast_are_a_buffer():
    assert _lines("torch.LongTensor(4, 2).float()") == []


def test_data_in_a_list_stays_reported():
    assert _lines("torch.Tensor([5])") == [6]


def test_lowercase_tensor_of_an_int_stays_reported():
    assert _lines("torch.tensor(5)") == [6]


def test_nested_list_stays_reported():
    assert _lines("torch.FloatTensor([[0.1, 0.2]])") == [6]
