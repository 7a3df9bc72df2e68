"""The flow engine: a model built by code the file imports from the project's own package
(`from model import Net`, `from models import build_model`) is a module when the file uses it the
way only an `nn.Module` is used (its `.parameters()` handed to an optimizer, or both
`.load_state_dict()` and `.eval()`). Where its constructor put it stays unknown; once the file
moves it, it is on the accelerator, and a host input reaching it is a mismatch (the inference
script that never moves its image: "Input type (torch.FloatTensor) and weight type
(torch.cuda.FloatTensor) should be the same")."""

from __future__ import annotations

import textwrap

from gpulint.engine import Options, run_text
from gpulint.registry import Registry


def findings(src: str, select=("GL101", "GL112", "GL116")) -> list[tuple[str, int]]:
    reg = Registry.load()
    rules = [reg.by_code(c)() for c in select]
    res = run_text("t.py", textwrap.dedent(src), rules, Options())
    return sorted((d.code, d.line) for d in res.diagnostics)


INFERENCE = """
import torch
from PIL import Image
import torchvision.transforms as transforms
from model import Net

device = "cuda" if torch.cuda.is_available() else "cpu"
model = Net()
model.load_state_dict(torch.load("model.pth", map_location=device))
model.to(device)
model.eval()
tf = transforms.Compose([transforms.Resize(32), transforms.ToTensor()])
img = tf(Image.open("x.png").convert("RGB")).unsqueeze(0)
with torch.no_grad():
    out = model(img)
print(out.argmax(1).item())
"""


def test_inference_script_image_not_moved():
    assert findings(INFERENCE) == [("GL116", 15)]


def test_inference_script_image_moved_is_silent():
    assert findings(INFERENCE.replace(".unsqueeze(0)", ".unsqueeze(0).to(device)")) == []


def test_not_used_as_a_module_stays_unknown():
    # a pipeline object: moved and called, but neither parameters() nor load_state_dict()+eval()
    src = """
    import torch
    from mylib import Pipeline

    device = "cuda" if torch.cuda.is_available() else "cpu"
    pipe = Pipeline()
    pipe.to(device)
    out = pipe(torch.randn(1, 3, 8, 8))
    """
    assert findings(src) == []


def test_factory_model_in_trainer_attribute():
    src = """
    import torch
    from models import build_model


    class Trainer:
        def __init__(self, cfg):
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            self.model = build_model(cfg).to(self.device)
            self.opt = torch.optim.Adam(self.model.parameters())

        def predict(self, x):
            return self.model(torch.as_tensor([x]))
    """
    assert findings(src) == [("GL116", 13)]


def test_unmoved_imported_model_is_not_reported_as_never_moved():
    # where `UNet(3, 1)` is depends on its constructor, which this file does not show
    src = """
    import torch
    from models import UNet

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = UNet(3, 1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for i in range(3):
        x = torch.randn(2, 3, 8, 8).to(device)
        loss = net(x).mean()
    """
    assert findings(src) == []


def test_training_loop_input_not_moved():
    src = """
    import torch
    from models import UNet

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = UNet(3, 1).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for i in range(3):
        x = torch.randn(2, 3, 8, 8)
        y = torch.randn(2, 1, 8, 8).to(device)
        loss = ((net(x) - y) ** 2).mean()
    """
    assert findings(src) == [("GL116", 11)]
