"""GL403: a model whose own class freezes every parameter it builds records no graph, so its
evaluation loop needs no `no_grad` (benchmarks/PRECISION47.md P47-1, ashawkey/stable-dreamfusion
ldm/modules/evaluate/evaluate_perceptualsim.py: `vgg16 = PNet().to("cuda")`, whose only module is
`self.net = vgg16(requires_grad=False)`, a feature net ending its `__init__` with
`if not requires_grad: for param in self.parameters(): param.requires_grad = False`, called image
after image through `perceptual_sim(p, t, vgg16)`). The `__init__` is read with the branches the
construction call's constant arguments take; a branch that builds a trainable net, a module added
after the freeze, a test that cannot be decided, or a model whose parameters are read or unfrozen
later keep the loop reported."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Feat(nn.Module):
    def __init__(self, requires_grad=False):
        super(Feat, self).__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False
{after_freeze}
    def forward(self, x):
        return self.body(x)


class Trainable(nn.Module):
    def __init__(self, requires_grad=False):
        super(Trainable, self).__init__()
        self.body = nn.Linear(4, 8)

    def forward(self, x):
        return self.body(x)


class PNet(nn.Module):
    def __init__(self, kind="lin", flag=True):
        super(PNet, self).__init__()
        self.kind = kind
        self.shift = torch.Tensor([0.1, 0.2, 0.3, 0.4]).view(1, 4)
        if self.kind in ["lin", "linear"]:
            self.net = Feat(requires_grad={rg})
        elif self.kind[:-2] == "deep":
            self.net = Trainable(requires_grad=False)
        if flag:
            self.shift = self.shift.cuda()

    def forward(self, a, b):
        return (self.net(a - self.shift) - self.net(b - self.shift)).pow(2).mean()


def sim(a, b, net):
    return net(a, b)


def evaluate(pairs):
    pnet = PNet({args}).cuda()
    pnet.eval()
{extra}    out = []
    for a, b in pairs:
        out.append({call}.item())
    return out


print(evaluate([(torch.randn(2, 4).cuda(), torch.randn(2, 4).cuda())]))
"""

LOOP_LINE = "loop"  # the `out.append(...)` line


def _lines(args="", rg="False", call="sim(a, b, pnet)", extra="", after_freeze=""):
    text = textwrap.dedent(SRC).format(args=args, rg=rg, call=call, extra=extra, after_freeze=after_freeze)
    loop = next(i for i, line in enumerate(text.splitlines(), 1) if line.strip().startswith("out.append("))
    return sorted("loop" if d.line == loop else d.line for d in check(text, ["GL403"]) if d.code == "GL403")


def test_frozen_feature_net_through_a_helper_is_silent():
    assert _lines() == []


def test_frozen_feature_net_called_directly_is_silent():
    assert _lines(call="pnet(a, b)") == []


def test_keyword_argument_picking_the_frozen_branch_is_silent():
    assert _lines(args='kind="linear", flag=False') == []


def test_requires_grad_true_stays_reported():
    assert _lines(rg="True") == [LOOP_LINE]


def test_branch_building_a_trainable_net_stays_reported():
    assert _lines(args='"deep18"') == [LOOP_LINE]


def test_undecidable_branch_stays_reported():
    assert _lines(args="kind=KIND") == [LOOP_LINE]


def test_module_added_after_the_freeze_stays_reported():
    assert _lines(after_freeze="        self.head = nn.Linear(8, 8)\n") == [LOOP_LINE]


def test_parameters_handed_to_an_optimizer_stay_reported():
    assert _lines(extra="    opt = torch.optim.SGD(pnet.parameters(), lr=0.1)\n") == [LOOP_LINE]


def test_whole_module_frozen_at_the_end_of_init_is_silent():
    assert _lines(rg="True", after_freeze="        self.requires_grad_(False)\n") == []


def test_module_added_after_a_whole_module_freeze_stays_reported():
    assert _lines(after_freeze="        self.requires_grad_(False)\n        self.head = nn.Linear(8, 8)\n") == [LOOP_LINE]
