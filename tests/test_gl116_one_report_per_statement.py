"""GL116 reports a host tensor once per statement (wenxin-liu/neural_bounding#2: the ellipsoid's
parameters, made on the host by a helper, are sliced into `center` and `axis_lengths`, and
`(points - center) / axis_lengths` met both halves): the statement's first operation says it.
Two different host values in one statement are still two findings."""

from __future__ import annotations

import textwrap

from fixture_support import check

ONE_HOST = """
import torch


def params(dim):
    p = torch.cat((torch.full((dim,), 0.5), torch.full((dim,), 0.1)))
    p.requires_grad = True
    return p


def distance(points, p, dim):
    center, axis = p[:dim], p[dim:]
    return ((points - center) / axis).norm(dim=1)


device = "cuda" if torch.cuda.is_available() else "cpu"
points = torch.rand(10, 2).to(device)
print(distance(points, params(2), 2).sum())
"""

TWO_HOSTS = """
import torch


def distance(points, dim):
    center = torch.cat((torch.full((dim,), 0.5), torch.full((dim,), 0.5)))[:dim]
    axis = torch.cat((torch.full((dim,), 0.1), torch.full((dim,), 0.1)))[:dim]
    return ((points - center) / axis).norm(dim=1)


device = "cuda" if torch.cuda.is_available() else "cpu"
points = torch.rand(10, 2).to(device)
print(distance(points, 2).sum())
"""


def _found(text):
    return [(d.line, d.message) for d in check(textwrap.dedent(text), {"GL116"}) if d.code == "GL116"]


def test_one_host_value_met_twice_in_a_statement_is_reported_once():
    assert len(_found(ONE_HOST)) == 1


def test_two_host_values_in_a_statement_are_two_findings():
    assert len(_found(TWO_HOSTS)) == 2


WGAN_GP = """
import torch
import torch.nn as nn


def gradient_penalty(critic, real, fake):
    alpha = torch.rand((real.shape[0], 1)).repeat(1, real.shape[1])
    mixed = real * alpha + fake * (1 - alpha)
    return critic(mixed).mean()


device = "cuda" if torch.cuda.is_available() else "cpu"
critic = nn.Linear(4, 1).to(device)
real, fake = torch.randn(8, 4).to(device), torch.randn(8, 4).to(device)
print(gradient_penalty(critic, real, fake))
"""


def test_a_host_value_and_arithmetic_on_it_in_one_statement_are_one_finding():
    # `alpha` and `1 - alpha`: one host tensor (aladdinpersson/Machine-Learning-Collection#58)
    assert len(_found(WGAN_GP)) == 1
