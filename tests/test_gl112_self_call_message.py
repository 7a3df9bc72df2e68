"""GL112 when the model called is `self`: a method of the class moves its own inputs
(Depth-Anything-V2#45's `infer_image` -> `image2tensor` -> `image.to(DEVICE)`) and calls
`self.forward(image)` / `self(image)` on an instance built on the host and never moved. The message
names the instance and where it is built; it never advises `self = self.to(...)`. The moved instance
stays silent."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 1, 3)

    def forward(self, x):
        return self.conv(x)

    @torch.no_grad()
    def infer_image(self, raw):
        image = torch.from_numpy(raw).unsqueeze(0)
        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        image = image.to(DEVICE)
        return CALL(image)


model = Net()
MOVE
model.eval()
print(model.infer_image(torch.rand(3, 8, 8).numpy()).shape)
'''


def _found(call="self.forward", move=""):
    text = TEXT.replace("CALL", call).replace("MOVE", move)
    return [d for d in check(text, {"GL112"}) if d.code == "GL112"]


def test_self_forward_names_the_instance_not_self():
    found = _found()
    assert [d.line for d in found] == [18]
    msg = found[0].message
    assert "self = self" not in msg
    assert "`model`, built on line 21," in msg and "`Net`" in msg


def test_self_call_names_the_instance_not_self():
    found = _found(call="self")
    assert [d.line for d in found] == [18]
    assert "self = self" not in found[0].message


def test_moved_instance_stays_silent():
    assert _found(move="model = model.to('cuda' if torch.cuda.is_available() else 'cpu')") == []
