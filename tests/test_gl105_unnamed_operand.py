"""GL105's message names the tensor whose device the factory should take. When the operand it
meets is an expression with no tensor name the engine places (detrex#295: DETA's Stage1Assigner
indexes `torch.arange(len(anchors))` with `matched_labels == 1`), it used to say
`pass device=x.device` with an `x` that the method does not have; now it names the expression and
invents no variable."""

from __future__ import annotations

from fixture_support import check

SRC = """
import torch
import torch.nn as nn


class Assigner(nn.Module):
    def forward(self, outputs, targets):
        found = []
        for b in range(len(targets)):
            anchors = outputs["anchors"][b]
            iou = anchors @ targets[b].t()
            vals, idxs = iou.max(dim=1)
            matched_labels = (vals > 0.5).long()
            all_inds = torch.arange(len(anchors))
            found.append(all_inds[matched_labels == 1])
        return found


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.assigner = Assigner()

    def forward(self, x, targets):
        return self.assigner({"anchors": self.lin(x)}, targets)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Head().to(device)
targets = [torch.randn(3, 4).to(device) for _ in range(2)]
print(model(torch.randn(2, 5, 4).to(device), targets))
"""


def test_message_invents_no_variable():
    found = [d for d in check(SRC, ["GL105"]) if d.code == "GL105"]
    assert len(found) == 1
    assert "x.device" not in found[0].message
    # the dict of anchors the head hands the assigner is known as a dict (E54-2), so the operand
    # it meets is named by the local bound before the factory in the same loop body, which the
    # fix can use: `device=matched_labels.device`
    assert "matched_labels" in found[0].message


def test_the_fix_names_a_tensor_bound_before_the_factory():
    from fixture_support import fix

    out = fix(SRC, ["GL105"], unsafe=False)
    assert "torch.arange(len(anchors), device=matched_labels.device)" in out.text
    compile(out.text, "fixed.py", "exec")
