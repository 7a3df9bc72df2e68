"""GL109 inside a module's forward (xiaxin1998/DHCN#14, tests/fixtures/GL109/hypergraph_layers_np_sum_in_forward.py).

A submodule's `forward` averages its layers' embeddings with `np.sum(final, 0)`; the tensors are
computed from its inputs and the parent's parameters, so they live wherever the model runs, and the
model is moved to the GPU: "can't convert cuda:0 device type tensor to numpy". The flow engine's
value there is "wherever the module is"; GL109 read only tensors known to be on an accelerator.
Now, in `forward` (or a helper only forward calls) of a module class, such a tensor counts as on
the accelerator, unless the file is a script or notebook that never asks for one.
"""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = """
import numpy as np
import torch
import torch.nn as nn


class HyperConv(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, adjacency, embedding):
        final = [embedding]
        for i in range(self.layers):
            embedding = torch.sparse.mm(adjacency, embedding)
            final.append(embedding)
        return np.sum(final, 0) / (self.layers + 1)


class DHCN(nn.Module):
    def __init__(self, adjacency, n_node):
        super().__init__()
        self.adjacency = adjacency
        self.embedding = nn.Embedding(n_node, 8)
        self.hyper = HyperConv(2)

    def forward(self, items):
        return self.hyper(self.adjacency, self.embedding.weight)[items]


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = DHCN(torch.eye(5).to_sparse().to(device), 5).to(device)
for step in range(3):
    out = model(torch.tensor([1, 2]).to(device))
"""


def _lines(src: str, fix: bool = False):
    rule = Registry.load().by_code("GL109")()
    return run_text("model.py", textwrap.dedent(src), [rule], Options(fix=fix))


def test_numpy_of_forward_tensors_in_a_file_that_uses_an_accelerator():
    assert [d.line for d in _lines(SRC).diagnostics] == [17]


def test_numpy_method_in_forward_is_fixed_with_cpu():
    src = SRC.replace("        return np.sum(final, 0) / (self.layers + 1)",
                      "        scale = embedding.detach().numpy().max()\n        return embedding / float(scale)")
    assert src != SRC
    res = _lines(src, fix=True)
    assert [d.line for d in res.initial] == [17]
    assert "        scale = embedding.detach().cpu().numpy().max()\n" in res.text


def test_a_script_that_never_asks_for_an_accelerator_is_silent():
    src = SRC.replace('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', 'device = "cpu"\n')
    src = src.replace(".to(device)", "")
    assert src != SRC
    assert _lines(src).diagnostics == []


def test_host_copies_and_methods_outside_forward_are_silent():
    src = SRC.replace("np.sum(final, 0)", "np.sum([t.detach().cpu() for t in final], 0)")
    assert _lines(src).diagnostics == []
    src = SRC.replace("    def forward(self, adjacency, embedding):", "    def export(self, adjacency, embedding):")
    assert _lines(src).diagnostics == []
