"""GL306 reports the removed `torch.distributed.deprecated` package read as an attribute
(G58-6, cavalleria/cavaface#63: `ReduceOp = torch.distributed.deprecated.reduce_op` raises
AttributeError), not only its imports; a probed read (an `if hasattr(...)`/version chain, a `try`
that catches AttributeError) and look-alikes stay silent."""

from __future__ import annotations

from fixture_support import check

HEAD = "import torch\nimport torch.distributed as dist\n"


def _lines(body):
    return [f.line for f in check(HEAD + body, {"GL306"})]


def test_read_through_the_package_path_is_reported():
    assert _lines("A = torch.distributed.deprecated.reduce_op\n") == [3]


def test_read_through_an_alias_is_reported():
    assert _lines("B = dist.deprecated.all_reduce\n") == [3]


def test_the_package_itself_is_reported():
    assert _lines("C = torch.distributed.deprecated\n") == [3]


def test_probe_chain_is_silent():
    assert _lines(
        "if hasattr(dist, 'ReduceOp'):\n    R = dist.ReduceOp\n"
        "else:\n    R = dist.deprecated.reduce_op\n"
    ) == []


def test_try_catching_attribute_error_is_silent():
    assert _lines(
        "try:\n    f = dist.deprecated.all_reduce\nexcept AttributeError:\n    f = dist.all_reduce\n"
    ) == []


def test_other_deprecated_attributes_are_silent():
    assert _lines(
        "class Cfg:\n    deprecated = False\n\n\ncfg = Cfg()\nflag = cfg.deprecated\n"
        "x = getattr(dist, 'deprecated', None)\n"
    ) == []
