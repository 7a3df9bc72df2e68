"""Engine items, eighteenth session.

PRECISION19 A2 (thunlp/OpenNRE `BagOne(BagRE)`, the base imported from another module of the
project): an explicit `self.forward(...)` in a method of a class whose base the file does not
define made the submodules of an instance "wherever the module is", so a host tensor handed to the
instance met a submodule "on the accelerator" (GL116) in a file that places nothing anywhere. An
instance built by the file is where it was built when the file never moves, places or launches
anything; once the file places something, the submodule is again wherever the module is.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import torch
import torch.nn as nn
from base_model_demo import BagRE


class SentenceEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 8)

    def forward(self, token):
        return self.proj(token)


class BagOne(BagRE):
    def __init__(self, sentence_encoder):
        super().__init__()
        self.sentence_encoder = sentence_encoder

    def infer(self, bag):
        return self.forward(bag)

    def forward(self, token, train=True):
        return self.sentence_encoder(token)


model = BagOne(SentenceEncoder()){move}
out = model.infer(torch.randn(6, 16))
print("device", "cpu")
"""


def gl116(src: str) -> list[int]:
    rule = Registry.load().by_code("GL116")()
    return [d.line for d in run_text("bag_one.py", textwrap.dedent(src), [rule], Options()).diagnostics]


def test_an_instance_of_a_class_with_an_imported_base_in_a_file_that_places_nothing():
    assert gl116(SRC.replace("{move}", "")) == []


def test_once_the_file_moves_the_instance_its_submodules_follow_it():
    # the same call after `model.to("cuda")`: the host input meets the moved submodule
    assert gl116(SRC.replace("{move}", '\nmodel.to("cuda")')) == [13]
