"""GL112: a mixin that builds and calls the layers of a module (THUwangcy/ReChorus
src/models/sequential/SASRec.py: `class SASRecBase(object)` builds `self.p_embeddings` in
`_base_define_params`, calls `self.apply(self.init_weights)`, and its `forward` feeds
`self.p_embeddings` positions made with `.to(self.device)`; `class SASRec(SequentialModel,
SASRecBase)` combines it with the project's nn.Module base, and main.py moves the whole model with
`model_name(args, corpus).to(args.device)`). The layers are registered on the combined module:
nothing is left on the CPU. A plain class that holds a layer and is neither combined with a module
nor uses `self` as one keeps the finding (a trainer object that never moves its model)."""

from __future__ import annotations

import textwrap

from fixture_support import check

MIXIN = """
import torch
import torch.nn as nn
{imports}


class SASRecBase(object):
    def _base_init(self, args):
        self.device = args.device
        self.len_range = torch.arange(50).to(self.device)
        self.p_embeddings = nn.Embedding(51, 8)
        {extra}

    def init_weights(self, m):
        pass

    def forward(self, lengths):
        position = lengths[:, None] - self.len_range[None, :]
        return self.p_embeddings(position)
{subclass}
"""


def _lines(imports="", extra="", subclass=""):
    src = textwrap.dedent(MIXIN).format(imports=imports, extra=extra, subclass=subclass)
    return [d.line for d in check(src, ["GL112"]) if d.code == "GL112"]


def test_mixin_calling_module_method_on_self_is_not_reported():
    assert _lines(extra="self.apply(self.init_weights)") == []


def test_mixin_combined_with_nn_module_in_the_file_is_not_reported():
    sub = """

class SASRec(nn.Module, SASRecBase):
    def __init__(self, args):
        nn.Module.__init__(self)
        self._base_init(args)
"""
    assert _lines(subclass=sub) == []


def test_mixin_combined_with_project_base_and_apply_is_not_reported():
    sub = """

class SASRec(SequentialModel, SASRecBase):
    def __init__(self, args, corpus):
        SequentialModel.__init__(self, args, corpus)
        self._base_init(args)
"""
    assert _lines(imports="from models.BaseModel import SequentialModel",
                  extra="self.apply(self.init_weights)", subclass=sub) == []


def test_plain_class_holding_a_layer_is_still_reported():
    assert _lines() == [19]


def test_module_method_called_on_another_object_does_not_count():
    assert _lines(extra="self.p_embeddings.apply(self.init_weights)") == [19]
