"""GL102 (PRECISION44, richarddwang/electra_pytorch finetune.py): CUDA literals in the branches of an
`if`/`elif`/`else` that dispatches on a configured device value (`c.device`: a string, a list of GPU
ids, None for every GPU), where another branch places on that configured value itself
(`dls.to(torch.device(c.device))`), serve the configuration's GPU forms: a CPU run names `'cpu'` in
the configuration and takes the string branch. Controls: the same chain with no branch that uses the
configured value itself, and literals under a test of something else, are still reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

LEARNER = """
import torch
import torch.nn as nn


class MyConfig(dict):
    def __getattr__(self, name):
        return self[name]


c = MyConfig({"device": "cuda:0", "lr": 0.1})


def get_glue_learner(dls):
BRANCHES
    model = nn.Linear(8, 2).to(dls.device)
    return model


if __name__ == "__main__":
    get_glue_learner(None)
"""

ELECTRA = """\
    if isinstance(c.device, str):
        dls.to(torch.device(c.device))
    elif isinstance(c.device, list):
        dls.to(torch.device('cuda', c.device[0]))
    else:
        dls.to(torch.device('cuda:0'))"""

NO_CONFIGURED_BRANCH = """\
    if isinstance(c.device, list):
        dls.to(torch.device('cuda', c.device[0]))
    else:
        dls.to(torch.device('cuda:0'))"""

OTHER_TEST = """\
    if c.lr > 0.01:
        dls.to(torch.device(c.device))
    else:
        dls.to(torch.device('cuda:0'))"""


def gl102(branches: str) -> list[int]:
    src = textwrap.dedent(LEARNER).replace("BRANCHES", branches)
    return [d.line for d in check(src, ["GL102"])]


def test_literals_in_the_gpu_branches_of_a_configured_device_are_silent():
    assert gl102(ELECTRA) == []


def test_a_chain_with_no_branch_on_the_configured_device_itself_still_fires():
    assert gl102(NO_CONFIGURED_BRANCH) == [16]


def test_a_chain_testing_something_else_still_fires():
    assert gl102(OTHER_TEST) == [18]
