"""Precision shapes of the eleventh pass (benchmarks/ENGINE_FP.md, "Eleventh precision pass" #1
and #2, both in the installed transformers 5.24.0): a 0-d host tensor made from a Python number
does not decide where an elementwise result lives (deberta's `relative_pos + att_span`), and
`torch.tensor(p)` of a parameter of unknown kind is not a fresh host factory (d_fine's
`torch.tensor(spatial_shapes)`: a tensor keeps its device)."""

from __future__ import annotations

from gpulint.engine import Options, run_text
from gpulint.registry import Registry

DEBERTA = 'import torch\nfrom torch import nn\n\n\ndef expand_index(pos, query_layer, relative_pos):\n    return pos.expand([query_layer.size(0), query_layer.size(1), relative_pos.size(-1)])\n\n\nclass Attn(nn.Module):\n    def __init__(self, dim=16, max_rel=8):\n        super().__init__()\n        self.max_rel = max_rel\n        self.q = nn.Linear(dim, dim)\n\n    def forward(self, x, relative_pos):\n        query_layer = self.q(x)\n        if relative_pos is None:\n            relative_pos = build_relative_position(query_layer, query_layer.device)\n        att_span = torch.tensor(min(query_layer.size(-2), self.max_rel))\n        scores = torch.matmul(query_layer, query_layer.transpose(-1, -2))\n        pos = torch.clamp(relative_pos + att_span, 0, att_span * 2 - 1)\n        return torch.gather(scores, dim=-1, index=expand_index(pos, query_layer, relative_pos))  # GL116\n'

DFINE = 'import torch\nfrom torch import nn\nfrom somewhere import BaseLayer\n\n\nclass Attn(nn.Module):\n    def __init__(self, d_model=16, n_levels=2):\n        super().__init__()\n        self.n_levels = n_levels\n        self.offsets = nn.Linear(d_model, n_levels * 2)\n\n    def forward(self, hidden_states, spatial_shapes=None):\n        offsets = self.offsets(hidden_states).reshape(1, -1, self.n_levels, 2)\n        normalizer = torch.tensor(spatial_shapes)          # GL105 here\n        return offsets / normalizer.flip([1]).reshape(1, 1, self.n_levels, 2)\n\n\nclass Layer(BaseLayer):                                    # an imported base\n    def __init__(self):\n        super().__init__()\n        self.attn = Attn()\n\n    def forward(self, hidden_states, spatial_shapes=None):\n        return self.attn(hidden_states, spatial_shapes=spatial_shapes)\n'


def findings(src):
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in ("GL105", "GL116", "GL101", "GL112")]
    return [(d.code, d.line) for d in run_text("t.py", src, rules, Options()).diagnostics]


def test_zero_dim_host_tensor_does_not_decide_the_device():
    assert findings(DEBERTA) == []


def test_a_one_dim_host_tensor_still_does():
    src = DEBERTA.replace("att_span = torch.tensor(min(query_layer.size(-2), self.max_rel))",
                          "att_span = torch.tensor([min(query_layer.size(-2), self.max_rel)])")
    assert ("GL105", 19) in findings(src)


def test_torch_tensor_of_an_unknown_parameter_is_not_a_host_factory():
    assert findings(DFINE) == []


def test_torch_tensor_of_a_list_display_still_is():
    src = DFINE.replace("normalizer = torch.tensor(spatial_shapes)", "normalizer = torch.tensor([[4, 4], [2, 2]])")
    assert [c for c, _ in findings(src)] == ["GL105"]
