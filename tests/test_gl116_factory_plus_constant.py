"""GL116's safe `device=` fix on a host factory combined with a number literal
(NVIDIA-Merlin/Transformers4Rec#509: `topk_labels[:, :k] / (torch.arange(k) + 1)`): the factory
gets `device=`; a factory combined with another tensor gets no such fix."""

from __future__ import annotations

import textwrap

from fixture_support import fix

SRC = """
import torch

def mrr(topk_labels, k):
    values, _ = (topk_labels[:, :k] / (torch.arange(k) + 1)).max(dim=1)
    return values

def mrr_flipped(topk_labels, k):
    return topk_labels[:, :k] * (2.0 - torch.ones(k))

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels = torch.rand(4, 5, device=device)
print(mrr(labels, 3), mrr_flipped(labels, 3))
"""

OTHER_TENSOR = """
import torch

def mrr(topk_labels, k, offsets):
    values, _ = (topk_labels[:, :k] / (torch.arange(k) + offsets)).max(dim=1)
    return values

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels = torch.rand(4, 5, device=device)
print(mrr(labels, 3, torch.ones(3)))
"""


def test_factory_plus_number_gets_device():
    out = fix(textwrap.dedent(SRC), {"GL116"}, unsafe=False).text
    assert "(torch.arange(k, device=topk_labels.device) + 1)" in out
    assert "(2.0 - torch.ones(k, device=topk_labels.device))" in out


def test_factory_plus_tensor_is_left():
    out = fix(textwrap.dedent(OTHER_TENSOR), {"GL116"}, unsafe=False).text
    assert "torch.arange(k) + offsets" in out
