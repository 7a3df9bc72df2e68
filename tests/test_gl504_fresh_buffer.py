"""GL504 is silent on a literal constant built and moved in a loop when the same loop then changes it
in place (PRECISION33 R1): a per-iteration loss accumulator (hendrycks/ss-ood
label_corruption/train_ss.py:161, `loss = torch.FloatTensor([0]).cuda()` then `loss +=
F.cross_entropy(...)`) and the receive buffer of an in-place collective (WXinlong/DenseCL
openselfsup/models/memories/odc_memory.py:215, `size1 = torch.LongTensor([0]).cuda()` then
`dist.all_reduce(size1)`). Built once above the loop, either would carry the previous iteration's
value into the next one. A constant the loop only reads stays reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.distributed as dist
import torch.nn.functional as F

logits = torch.randn(4, 3)
target = torch.tensor([0, 1, 2, 0])
for step in range(10):
    acc = torch.FloatTensor([0]).cuda()
    USE
'''


def _lines(text):
    return [f.line for f in check(text, {"GL504"})]


def test_accumulator_augassign_is_fresh_each_iteration():
    assert _lines(TEXT.replace("USE", "acc += F.cross_entropy(logits, target)\n    print(acc)")) == []


def test_buffer_of_an_inplace_collective_is_fresh_each_iteration():
    assert _lines(TEXT.replace("USE", "dist.all_reduce(acc)\n    print(acc)")) == []


def test_inplace_method_counts_too():
    assert _lines(TEXT.replace("USE", "acc.add_(F.cross_entropy(logits, target))\n    print(acc)")) == []


def test_read_only_constant_stays_reported():
    assert _lines(TEXT.replace("USE", "print(torch.max(logits.sum(), acc))")) == [8]


def test_other_name_changed_in_place_stays_reported():
    text = TEXT.replace("USE", "other = torch.zeros(1)\n    other += acc")
    assert _lines(text) == [8]
