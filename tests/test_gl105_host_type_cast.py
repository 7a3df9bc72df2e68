"""GL105 and a factory whose value is cast to a host tensor type before it meets the device
(precision45, R2; seongjunyun/Graph_Transformer_Networks prev_GTN/model.py, `GTN.norm`:
`H * ((torch.eye(n) == 0).type(torch.FloatTensor))`). The report stays (the module fails on a
GPU), but `device=H.device` on the factory would leave the mismatch, since `.type(torch.FloatTensor)`
copies the result back to the CPU: no fix is offered and the message names the cast. A cast that
keeps the device (`.float()`, `.type(torch.cuda.FloatTensor)` is not a host type) keeps the fix."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, H):
        H = H * EXPR
        return self.lin(H)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
out = model(torch.randn(4, 4, device=device))
'''


def _found(expr):
    return [d for d in check(TEXT.replace("EXPR", expr), {"GL105"}) if d.code == "GL105"]


def test_host_type_cast_reported_without_fix():
    for expr in ("((torch.eye(H.shape[0]) == 0).type(torch.FloatTensor))",
                 "torch.eye(H.shape[0]).type(torch.FloatTensor)",
                 "torch.eye(H.shape[0]).unsqueeze(0).type('torch.FloatTensor')"):
        found = _found(expr)
        assert [d.line for d in found] == [11], expr
        assert found[0].fix is None, expr
        assert "puts the result back on the CPU" in found[0].message
        assert ".type(" in found[0].message
        text = TEXT.replace("EXPR", expr)
        assert fix(text, {"GL105"}, True).text == text


def test_device_keeping_cast_keeps_the_fix():
    found = _found("(torch.eye(H.shape[0]) == 0).float()")
    assert [d.line for d in found] == [11]
    assert found[0].fix is not None
    assert "device=H.device" in fix(TEXT.replace("EXPR", "(torch.eye(H.shape[0]) == 0).float()"), {"GL105"}, True).text
