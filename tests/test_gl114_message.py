"""GL114 names the collate function once: a function called `collate_fn` was printed as
"`collate_fn` `collate_fn`"."""

from __future__ import annotations

import pytest
from fixture_support import check

TEMPLATE = '''import torch
from torch.utils.data import DataLoader, TensorDataset


def {name}(batch):
    x = torch.stack([b[0] for b in batch])
    return x.cuda()


{extra}loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, num_workers=2, collate_fn={arg})
'''


@pytest.mark.parametrize(
    "name,extra,arg,where",
    [
        ("collate_fn", "", "collate_fn", "inside `collate_fn`, but"),
        ("to_device", "", "to_device", "inside `to_device` (the loader's `collate_fn`), but"),
        ("unused", "pad = lambda batch: batch[0].cuda()\n", "pad", "inside `pad` (the loader's `collate_fn`), but"),
    ],
)
def test_the_collate_function_is_named_once(name, extra, arg, where):
    found = [d for d in check(TEMPLATE.format(name=name, extra=extra, arg=arg), {"GL114"}) if d.code == "GL114"]
    assert len(found) == 1
    assert where in found[0].message
    assert "`collate_fn` `" not in found[0].message
